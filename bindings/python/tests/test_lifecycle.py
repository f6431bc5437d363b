"""Life cycle: close, context managers, garbage collection, interpreter exit, and loading the
library (search order, CONTENTCARDS_LIBRARY, ABI check)."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import weakref

import pytest

import contentcards as cc
from contentcards import _ffi, _library
from conftest import IMPORT_PRELUDE, REPO, SAMPLE_FEED, open_sample


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", IMPORT_PRELUDE + textwrap.dedent(code)],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, **(env or {})})


def test_context_manager_and_close() -> None:
    with open_sample() as c:
        assert not c.closed
        c.refresh()
    assert c.closed
    c.close()
    c.close()
    with pytest.raises(cc.ClosedError, match="closed"):
        c.cards()
    assert repr(c) == "<ContentCards closed>"


def test_async_context_manager() -> None:
    """async with closes the controller on the way out, also on an exception, and the close
    does not block the event loop."""
    import asyncio

    async def main() -> tuple[cc.ContentCards, cc.ContentCards]:
        async with cc.ContentCards(user_id="u", refresh_tokens=0,
                                   source={"file": SAMPLE_FEED}) as c:
            assert not c.closed
            assert (await c.refresh_async(5)).added == 11
            stream = c.updates()
        assert c.closed
        assert [update async for update in stream] == []   # the stream ended with the close
        failing = cc.ContentCards(user_id="u")
        try:
            async with failing:
                raise KeyError("boom")
        except KeyError:
            pass
        return c, failing

    closed, failed = asyncio.run(main())
    assert closed.closed and failed.closed
    with pytest.raises(cc.ClosedError):
        closed.count()


def test_garbage_collected_without_close() -> None:
    before = len(_ffi.callbacks)
    for _ in range(10):
        c = open_sample()
        c.refresh()
        c.subscribe(lambda update: None)  # the subscriber does not keep the controller alive
        c.set_transport(lambda request: cc.TransportResponse(200))
        ref = weakref.ref(c)
        del c
        gc.collect()
        assert ref() is None
    assert len(_ffi.callbacks) == before  # closing released every callback


def test_an_update_stream_left_open_does_not_keep_its_controller() -> None:
    """A stream of updates dropped without ``aclose``: the controller is still collected (and
    closed by it). The stream's subscription held the controller, and the library's registry
    held the stream until a close that then never came."""
    import asyncio

    async def main() -> weakref.ref[cc.ContentCards]:
        c = open_sample()
        stream = c.updates()
        assert stream is not None
        return weakref.ref(c)

    before = len(_ffi.callbacks)
    ref = asyncio.run(main())
    gc.collect()
    assert ref() is None
    assert len(_ffi.callbacks) == before


def test_subscriber_referencing_its_controller_is_collected_after_close() -> None:
    c = open_sample()
    c.subscribe(lambda update: c.count())
    ref = weakref.ref(c)
    c.close()  # releases the subscriber, and with it the reference to c
    del c
    gc.collect()
    assert ref() is None


def test_card_and_objects_outlive_the_controller() -> None:
    c = open_sample()
    c.refresh()
    cards = c.cards()
    c.close()
    del c
    gc.collect()
    assert cards[0].id == "tile-2" and cards[0].extras["tile_price"] == "34.50"


def test_interpreter_exit_with_open_controllers() -> None:
    result = run_python(f"""
        import contentcards as cc
        a = cc.ContentCards(user_id="a", refresh_tokens=0, source={{"file": {SAMPLE_FEED!r}}})
        b = cc.ContentCards(user_id="b", refresh_tokens=0, source={{"file": {SAMPLE_FEED!r}}})
        a.refresh(); b.refresh()
        a.subscribe(lambda update: print("update", update.reason))
        b.log_impression("tile-1")
        print("open", a.count(), b.unviewed_count())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == "open 10 8\n"


def test_interpreter_exit_during_background_work() -> None:
    """Exit while library threads refresh and call Python subscribers, with controllers held
    by module globals, cycles and threads: exit 0, nothing on stderr."""
    result = run_python(f"""
        import threading, contentcards as cc
        controllers = []
        for i in range(4):
            c = cc.ContentCards(user_id=f"u{{i}}", refresh_tokens=0,
                                source={{"file": {SAMPLE_FEED!r}}})
            c.subscribe(lambda update, c=c: c.count())   # a cycle through the subscriber
            c.refresh_in_background()
            controllers.append(c)
        cycle = {{}}
        cycle["self"] = cycle
        cycle["c"] = cc.ContentCards(refresh_tokens=0, source={{"file": {SAMPLE_FEED!r}}})
        cycle["c"].refresh_in_background()
        def refresh_until_closed():
            try:
                while True:
                    controllers[0].refresh()
            except cc.ClosedError:
                pass   # the atexit hook closed it under this daemon thread
        threading.Thread(target=refresh_until_closed, daemon=True).start()
        print("bye")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == "bye\n"


def test_close_from_inside_a_subscriber() -> None:
    c = open_sample()
    closed_inside: list[bool] = []

    def close_me(update: cc.Update) -> None:
        c.close()
        closed_inside.append(c.closed)

    c.subscribe(close_me)
    c.refresh()  # the refresh succeeded before the subscriber ran
    assert closed_inside == [True] and c.closed
    with pytest.raises(cc.ClosedError):
        c.count()


def test_many_threads_closing_at_once() -> None:
    c = open_sample()
    c.refresh()
    errors: list[BaseException] = []

    def work() -> None:
        for _ in range(50):
            try:
                c.counts()
            except cc.ClosedError:
                return
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
                return

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    closers = [threading.Thread(target=c.close) for _ in range(4)]
    for thread in closers:
        thread.start()
    for thread in threads + closers:
        thread.join()
    assert errors == [] and c.closed


# --- loading the library ----------------------------------------------------------------------


def test_search_order() -> None:
    names = [origin for _path, origin in _library.candidates()]
    if os.environ.get(_library.ENV_VAR):
        assert names == [f"${_library.ENV_VAR}"]
    else:
        assert names[0] == "package"
        if _library._repo_root() is not None:  # running from a checkout
            assert names[1:3] == ["checkout (CMake build)", "checkout (SwiftPM build)"]
        assert names[-1] == "system (dynamic linker)"


def test_env_var_names_the_library() -> None:
    lib = cc.library_path()
    result = run_python("import contentcards; print(contentcards.library_path())",
                        {"CONTENTCARDS_LIBRARY": lib})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == lib


def test_env_var_that_fails_never_falls_back(tmp_path: os.PathLike[str]) -> None:
    bogus = os.path.join(os.fspath(tmp_path), "libcontentcards.so.1")
    with open(bogus, "w") as f:
        f.write("not a library")
    for path in (bogus, os.path.join(os.fspath(tmp_path), "missing.so")):
        result = run_python("import contentcards", {"CONTENTCARDS_LIBRARY": path})
        assert result.returncode != 0
        assert "ImportError" in result.stderr or "LibraryLoadError" in result.stderr
        assert path in result.stderr and "CONTENTCARDS_LIBRARY" in result.stderr


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_abi_mismatch(tmp_path: os.PathLike[str]) -> None:
    source = os.path.join(os.fspath(tmp_path), "fake.c")
    fake = os.path.join(os.fspath(tmp_path), "libcontentcards.so.2")
    with open(source, "w") as f:
        f.write("int cc_abi_version(void) { return 2; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", fake, source], check=True, timeout=60)
    result = run_python("import contentcards", {"CONTENTCARDS_LIBRARY": fake})
    assert result.returncode != 0
    assert f"found ABI 2 at {fake}, this package needs 1" in result.stderr


def test_the_ffi_table_covers_the_header() -> None:
    """SIGNATURES declares every function of contentcards.h, with as many arguments."""
    import re

    with open(os.path.join(REPO, "include", "contentcards.h")) as f:
        header = f.read()
    header = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    declared: dict[str, int] = {}
    for match in re.finditer(r"\b(cc_\w+)\s*\(([^;{]*?)\)\s*;", header, flags=re.S):
        name, params = match.group(1), match.group(2)
        if name.endswith("_fn"):
            continue
        params = re.sub(r"\([^()]*\)\s*\([^()]*\)", "fnptr", params)  # void (*f)(void *)
        count = 0 if params.strip() in ("", "void") else params.count(",") + 1
        declared[name] = count
    assert len(declared) == 66
    assert set(declared) == set(_ffi.SIGNATURES)
    assert _ffi.NEWER <= set(declared)
    for name, count in declared.items():
        assert len(_ffi.SIGNATURES[name][1]) == count, name
        if name in _ffi.NEWER and not _ffi.has(name):
            continue  # a library built before the function: loads, the method says so
        assert getattr(_ffi.lib, name).argtypes is not None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_fork_while_a_thread_holds_the_bindings_locks_does_not_hang_the_child() -> None:
    """A thread that holds the bindings' log or callback lock at a fork (the log lock is held
    across the C call that installs the handler) does not exist in the child: the child gets
    new locks, where its first controller waited forever in follow_logger_level and its first
    subscribe in the callback registry."""
    import time
    from contentcards import _logs
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with _logs._lock, _ffi.callbacks._lock:
            held.set()
            release.wait(20)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(5)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _logs.reinstall()
            with open_sample() as c:
                c.subscribe(lambda update: None)
            code = 0
        finally:
            os._exit(code)
    release.set()
    holder.join()
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the child hung on a lock held at the fork")
        time.sleep(0.02)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_a_subscriber_that_raised_leaves_no_cycle_keeping_its_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    """A subscriber's exception kept on the controller (to be raised later) does not keep the
    controller alive through the frame its traceback holds: dropped, the controller goes at
    once, not when the garbage collector finds the cycle and closes it on whatever thread it
    runs (where a close may wait for a subscriber that waits for a lock that thread holds)."""
    import time
    reported: list[str] = []   # the text only: the hook's arguments hold the traceback's frames
    monkeypatch.setattr(sys, "unraisablehook", lambda args: reported.append(str(args.exc_value)))
    c = open_sample()
    called = threading.Event()

    def boom(update: object) -> None:
        called.set()
        raise RuntimeError("a subscriber's bug")

    c.subscribe(boom)
    c.refresh()
    assert called.wait(5)
    deadline = time.monotonic() + 5
    while not c.subscriber_errors and time.monotonic() < deadline:
        time.sleep(0.01)
    ref = weakref.ref(c)
    gc.disable()
    try:
        del c
        assert ref() is None
    finally:
        gc.enable()


def test_a_call_refused_before_the_library_keeps_no_callback() -> None:
    """A callback registered for a call that never reaches the library (a bad argument found
    after it was registered, or a controller closed in between) is let go: it stayed in the
    registry, with what it holds (an event loop and a future), for the life of the process."""
    import asyncio
    c = open_sample()
    before = len(_ffi.callbacks)

    async def bad_timeout() -> None:
        await c.refresh_async(timeout="5")  # type: ignore[arg-type]

    with pytest.raises(TypeError):
        asyncio.run(bad_timeout())
    assert len(_ffi.callbacks) == before
    key = _ffi.callbacks.add(lambda *a: None)
    handle, c._handle = c._handle, None       # closed between the key and the call
    with pytest.raises(cc.ClosedError):
        c._call_keyed(key, _ffi.controller_set_transport)
    assert key not in _ffi.callbacks
    c._handle = handle
    c.close()
