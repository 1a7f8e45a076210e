"""The chat loop and its model providers. Nothing here knows about git or the terminal."""
