#!/usr/bin/env python3
"""prompts.py - runs a command in a real terminal (a pseudo-terminal) and answers its prompts
the way a person would, for Switchboard's tests of `switchboard add`.

    ANSWERS='["", "4100", "secret", "y"]' prompts.py PROGRAM ARGS...

Each time the program stops at a prompt (its output ends with ": " or "] " and nothing more
comes for a moment), the next answer is typed, followed by Enter. Everything the terminal
showed (typed characters a terminal echoes included, so a secret read with echo off stays
off the screen) is printed on stdout at the end; the exit status is the program's.
"""

import json
import os
import pty
import select
import sys
import time

QUIET = 0.3   # seconds without output that make a prompt a prompt
LIMIT = 120   # seconds the whole run may take


def main():
    answers = json.loads(os.environ.get("ANSWERS", "[]"))
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.argv[1], sys.argv[1:])
    screen = b""
    pending = b""
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], QUIET)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
            pending += chunk
            continue
        if answers and pending.endswith((b": ", b"] ")):
            os.write(fd, answers.pop(0).encode() + b"\r")
            pending = b""
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(screen.decode(errors="replace"))
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
