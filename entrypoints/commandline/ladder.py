"""The one exception-to-exit-code ladder: a command's result on stdout, or one error line."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any, Callable, NoReturn

from commandline.errors import (EXIT_FAILED, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK,
                                 ProgramError, one_line)
from commandline.settings import DEBUG


def emit(result: Any) -> None:
    """The one JSON emitter of every program: result as one JSON object on one line of
    stdout (UTF-8 as is). A str is the output already encoded (biotool's rendered answer,
    molperceive label's bytes, k8s-values' YAML file) and is written as it is."""
    if not isinstance(result, str):
        import json  # not at start-up: --help and a usage error print no JSON

        result = json.dumps(result, ensure_ascii=False)
    sys.stdout.write(result if result.endswith("\n") else result + "\n")
    sys.stdout.flush()


def fail_line(prog: str, message: str, code: int) -> NoReturn:
    """The one error line of every program (`PROG: error: ...`), then exit with `code`."""
    sys.stdout.flush()
    sys.stderr.write(f"{prog}: error: {one_line(message)}\n")
    sys.stderr.flush()
    raise SystemExit(code)


def no_temp_dir(exc: BaseException) -> str | None:
    """The folders Python's tempfile tried, when exc is its "No usable temporary directory"
    (every candidate, TMPDIR and /tmp included, unwritable), else None."""
    said = exc.args[1] if len(exc.args) > 1 else ""
    prefix = "No usable temporary directory found in "
    if not isinstance(exc, FileNotFoundError) or not str(said).startswith(prefix):
        return None
    tried = str(said)[len(prefix):].strip("[]")
    return tried if os.environ.get("TMPDIR") else f"TMPDIR (unset), {tried}"


def finish(prog: str, fn: Callable[[], Any], emit: Callable[[Any], None]) -> NoReturn:
    """Call `fn`, `emit` its result and exit 0; every exception becomes one line and its code.

    A ProgramError carries its own code (and maybe a report, emitted first); anything else is
    exit 4, since the contract forbids tracebacks (BIOTOOL_DEBUG=1 shows them)."""
    try:
        result = fn()
    except ProgramError as exc:
        if exc.result is not None:
            emit(exc.result)
        fail_line(prog, exc.message, exc.exit_code)
    except KeyboardInterrupt:
        fail_line(prog, "interrupted", EXIT_INTERRUPTED)
    except (MemoryError, RecursionError) as exc:
        fail_line(prog, f"out of resources: {type(exc).__name__}", EXIT_FAILED)
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        tried = no_temp_dir(exc)
        if tried:  # a read-only root with no tmpfs: the caller's setup, as an unwritable cache
            fail_line(prog, f"no writable temporary folder: {tried} are read-only or missing; "
                      "mount a tmpfs at /tmp or set TMPDIR to a writable folder", EXIT_INPUT)
        if DEBUG.get():
            raise
        fail_line(prog, f"internal error: {type(exc).__name__}: {exc}", EXIT_FAILED)
    emit(result)
    raise SystemExit(EXIT_OK)


def run_process(main: Callable[[], Any]) -> NoReturn:
    """Run a program's `main` as this process and leave as soon as its output is out.

    The interpreter's own teardown (collecting every module of torch, transformers, scanpy)
    took 1.4 s on a 2-core host after the answer was already printed: time an agent waits for
    nothing. So stdout and stderr are flushed, the atexit functions (temporary folders,
    logging) run, and the process ends there; a non-integer exit or a thread still working
    takes the ordinary way out."""
    try:
        main()
        code: Any = EXIT_OK
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = EXIT_OK
    busy = [t for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if not isinstance(code, int) or busy:
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what was not read is the reader's loss
            pass
    atexit._run_exitfuncs()
    os._exit(code)
