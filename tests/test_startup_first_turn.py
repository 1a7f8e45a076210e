"""Start-up, the first turn: what the first request of ``gs chat`` waits for is only what a plain turn uses.

With one GIL, the first token of a chat started and typed into at once comes after all the
work done before it in any thread; the slash commands and Tab's completer wait for the first
line or key that needs them.
"""

from __future__ import annotations

import sys

import pexpect
from fakeapi import text
from test_pty import PROMPT, TIMEOUT, chat_env, finish

__all__ = ["chat_env"]  # a fixture shared with test_pty

#: Runs ``gs chat`` (argv after the script) and names gs's modules imported when it first connects to the
#: model, and the threads that started a subprocess before that.
_AT_REQUEST = (
    "import sys, threading\n"
    "def hook(event, args):\n"
    "    if event == 'subprocess.Popen' and not hook.done:\n"
    "        hook.popen.append(threading.current_thread().name)\n"
    "    if event == 'socket.connect' and isinstance(args[1], tuple) and not hook.done:\n"
    "        hook.done = True\n"
    "        print('IMPORTED', sorted(m for m in sys.modules if m.startswith('gitsessions')), flush=True)\n"
    "        print('POPEN', hook.popen, flush=True)\n"
    "hook.done, hook.popen = False, []\n"
    "sys.addaudithook(hook)\n"
    "sys.argv = ['gs'] + sys.argv[1:]\n"
    "from gitsessions.cli import main\n"
    "main()\n"
)

#: Imported by a slash command or a Tab, not by a plain turn.
_ON_DEMAND = {"gitsessions.cli.repl.slash", "gitsessions.cli.repl.slash_compact", "gitsessions.cli.repl.slash_settings",
              "gitsessions.cli.repl.complete"}


def test_the_first_request_waits_for_no_slash_command_tab_or_subprocess_which_work_after_it(chat_env, fake_api):
    fake_api.script(text("Hello from the model."))
    child = pexpect.spawn(sys.executable, ["-c", _AT_REQUEST, "chat", "demo"], env=chat_env, dimensions=(24, 100),
                          encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    child.expect(PROMPT)
    child.sendline("hello")
    child.expect(r"IMPORTED (\[.*?\])")
    modules = set(eval(child.match.group(1)))  # a list literal printed by the child
    assert "gitsessions.chat.loop" in modules  # the turn's own, imported by now
    assert not modules & _ON_DEMAND, modules & _ON_DEMAND
    child.expect(r"POPEN (\[.*?\])")
    # the SDK's platform headers (``uname -p``) are computed where the client is built, behind the prompt
    assert "MainThread" not in eval(child.match.group(1)), child.match.group(1)
    child.expect_exact("Hello from the model.")
    child.expect(PROMPT)
    child.send("/ti")
    child.expect_exact("/ti")
    child.send("\t")  # the first Tab builds the completer
    child.expect_exact("tle")
    child.send(" greetings\r")  # the first slash command imports them
    child.expect_exact("(title: greetings)")
    child.expect(PROMPT)
    child.sendline("/exit")
    assert finish(child) and child.exitstatus == 0
