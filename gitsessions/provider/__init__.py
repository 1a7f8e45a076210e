"""The model behind the chat: the OpenAI-compatible client, its wire format, the embedded model.

Nothing here knows about git, sessions or the terminal: :mod:`.client` the chat-completions
client; :mod:`.wire` the request body and streamed reply as plain JSON; :mod:`.body` the streamed
body read a socket read at a time; :mod:`.local` the embedded llama.cpp server; :mod:`.connect`
a provider chosen from the config.
"""
