"""Every status a C function returns is one its comment in contentcards.h lists (the
header's "Statuses" convention). Each function of the header is called through
ctypes on the paths that produce the conventional statuses: a NULL output, a NULL or invalid
UTF-8 string, a NULL, closed or forged handle, a controller inherited across fork(); the
status that comes back must be in its "Errors:" list."""

from __future__ import annotations

import ctypes
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import pytest

from contentcards import _ffi
from contentcards.errors import STATUS_NAMES, ContentCardsError
from conftest import HEADER, SAMPLE_FEED

lib = _ffi.lib
NAME_TO_CODE = {name: code for code, name in STATUS_NAMES.items()}


def documented() -> dict[str, set[int]]:
    """{function: the statuses of its comment's "Errors:" clause} (CC_OK always allowed)."""
    with open(HEADER) as f:
        header = f.read()
    out: dict[str, set[int]] = {}
    pattern = r"/\*((?:(?!\*/).)*?)\*/\s*(?:typedef[^;]*;\s*)?CC_API[^;]*?\b(cc_\w+)\s*\("
    for match in re.finditer(pattern, header, flags=re.S):
        comment, name = match.group(1), match.group(2)
        at = comment.find("Errors:")
        if at >= 0:
            names = re.findall(r"CC_E_[A-Z_]+", comment[at:])
            out[name] = {0} | {NAME_TO_CODE[n] for n in names}
    # Two declarations share one comment each.
    out["cc_snapshot_extra_at"] = out["cc_snapshot_extras_count"]
    out["cc_controller_unviewed_count"] = out["cc_controller_total_count"]
    return out


DOCUMENTED = documented()


def status(call: Callable[[], Any]) -> int:
    """The status of a call: the errcheck's exception code, or a PLAIN function's result."""
    try:
        result = call()
    except ContentCardsError as exc:
        return exc.code
    return result if isinstance(result, int) and result < 0 else 0


def open_controller() -> int:
    out = _ffi.handle_t()
    config = ('{"userId":"u","refreshTokens":0,"source":{"file":%s}}' % repr(SAMPLE_FEED)
              .replace("'", '"')).encode()
    lib.cc_controller_open(ctypes.byref(out), config)
    return int(out.value)


OUT = ctypes.c_void_p
BAD = b"\xff\xfe"


def probes(h: int) -> list[tuple[str, Callable[[], Any]]]:
    """(function, call) pairs on controller handle h: NULL outputs, NULL and invalid strings."""
    i64, u64, size = ctypes.c_int64(), ctypes.c_uint64(), ctypes.c_size_t()
    return [
        ("cc_controller_open", lambda: lib.cc_controller_open(None, None)),
        ("cc_controller_open", lambda: lib.cc_controller_open(ctypes.byref(_ffi.handle_t()), BAD)),
        ("cc_controller_refresh", lambda: lib.cc_controller_refresh(None, h, float("nan"))),
        ("cc_controller_refresh_in_background",
         lambda: lib.cc_controller_refresh_in_background(h, float("nan"), _ffi.NULL_REFRESH_DONE_FN,
                                                         None, _ffi.NULL_FREE_FN)),
        ("cc_controller_refresh_async", lambda: lib.cc_controller_refresh_async(h)),
        ("cc_controller_apply", lambda: lib.cc_controller_apply(None, h, None)),
        ("cc_controller_apply", lambda: lib.cc_controller_apply(None, h, BAD)),
        ("cc_controller_feed", lambda: lib.cc_controller_feed(None, h, None)),
        ("cc_controller_feed", lambda: lib.cc_controller_feed(ctypes.byref(OUT()), h, BAD)),
        ("cc_controller_card", lambda: lib.cc_controller_card(None, h, b"tile-1")),
        ("cc_controller_card", lambda: lib.cc_controller_card(ctypes.byref(OUT()), h, None)),
        ("cc_controller_counts", lambda: lib.cc_controller_counts(None, None, h, BAD)),
        ("cc_controller_total_count", lambda: lib.cc_controller_total_count(h, BAD)),
        ("cc_controller_unviewed_count", lambda: lib.cc_controller_unviewed_count(h, b"[1]")),
        ("cc_controller_log_impression", lambda: lib.cc_controller_log_impression(h, None)),
        ("cc_controller_log_click", lambda: lib.cc_controller_log_click(h, BAD)),
        ("cc_controller_log_dismissal", lambda: lib.cc_controller_log_dismissal(h, b"ghost")),
        ("cc_controller_log_feed_displayed", lambda: lib.cc_controller_log_feed_displayed(h)),
        ("cc_controller_log", lambda: lib.cc_controller_log(None, h, None, None)),
        ("cc_controller_mark_read", lambda: lib.cc_controller_mark_read(None, h, None, 1)),
        ("cc_controller_mark_read", lambda: lib.cc_controller_mark_read(None, h, b"ghost", 0)),
        ("cc_controller_mark_all_read", lambda: lib.cc_controller_mark_all_read(None, h, BAD)),
        ("cc_controller_unread_count", lambda: lib.cc_controller_unread_count(h, b"[1]")),
        ("cc_controller_all_counts",
         lambda: lib.cc_controller_all_counts(None, None, None, h, BAD)),
        ("cc_controller_wait_images", lambda: lib.cc_controller_wait_images(None, h, 0.1)),
        ("cc_controller_wait_images",
         lambda: lib.cc_controller_wait_images(None, h, float("nan"))),
        ("cc_controller_log", lambda: lib.cc_controller_log(None, h, b"click", b"ghost")),
        ("cc_controller_change_user", lambda: lib.cc_controller_change_user(h, None)),
        ("cc_controller_user", lambda: lib.cc_controller_user(None, h)),
        ("cc_controller_flush_events", lambda: lib.cc_controller_flush_events(None, h, 1.0)),
        ("cc_controller_flush_events",
         lambda: lib.cc_controller_flush_events(None, h, float("nan"))),
        ("cc_controller_pending_events", lambda: lib.cc_controller_pending_events(None, h)),
        ("cc_controller_pending_events",
         lambda: lib.cc_controller_pending_events(ctypes.byref(i64), h)),
        ("cc_controller_pending_events_json",
         lambda: lib.cc_controller_pending_events_json(None, h, 0)),
        ("cc_controller_diagnostics", lambda: lib.cc_controller_diagnostics(None, h)),
        ("cc_controller_current_update", lambda: lib.cc_controller_current_update(None, h)),
        ("cc_controller_subscribe",
         lambda: lib.cc_controller_subscribe(None, h, _ffi.UPDATE_TRAMPOLINE, None,
                                             _ffi.NULL_FREE_FN)),
        ("cc_controller_subscribe",
         lambda: lib.cc_controller_subscribe(ctypes.byref(u64), h, _ffi.UPDATE_FN(), None,
                                             _ffi.NULL_FREE_FN)),
        ("cc_controller_unsubscribe", lambda: lib.cc_controller_unsubscribe(h, 987654)),
        ("cc_controller_set_transport",
         lambda: lib.cc_controller_set_transport(h, _ffi.NULL_TRANSPORT_FN, None,
                                                 _ffi.NULL_FREE_FN)),
        ("cc_controller_snapshot", lambda: lib.cc_controller_snapshot(None, h, None)),
        ("cc_controller_snapshot",
         lambda: lib.cc_controller_snapshot(ctypes.byref(_ffi.handle_t()), h, BAD)),
        ("cc_snapshot_count", lambda: lib.cc_snapshot_count(ctypes.byref(size), h)),
        ("cc_transport_response_set", lambda: lib.cc_transport_response_set(None, 200, None, 0, -1)),
        ("cc_transport_response_fail", lambda: lib.cc_transport_response_fail(None, b"x")),
        # h is a controller: another kind of handle for the configuration functions
        ("cc_config_new", lambda: lib.cc_config_new(None)),
        ("cc_config_set_string", lambda: lib.cc_config_set_string(h, b"userId", b"u")),
        ("cc_config_set_number", lambda: lib.cc_config_set_number(h, b"refreshTokens", 1.0)),
        ("cc_config_set_bool", lambda: lib.cc_config_set_bool(h, b"source.callback", 1)),
        ("cc_config_append_string",
         lambda: lib.cc_config_append_string(h, b"knownClassTypes", b"t")),
        ("cc_config_json", lambda: lib.cc_config_json(ctypes.byref(OUT()), h)),
        ("cc_config_close", lambda: lib.cc_config_close(h)),
    ] + newer_probes(h)


def newer_probes(h: int) -> list[tuple[str, Callable[[], Any]]]:
    """Probes of the functions of _ffi.NEWER that the loaded library has."""
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("cc_token_response_set", lambda: lib.cc_token_response_set(None, b"t", 0)),
        ("cc_token_response_fail", lambda: lib.cc_token_response_fail(None, b"x")),
        ("cc_controller_set_token_provider",
         lambda: lib.cc_controller_set_token_provider(h, _ffi.NULL_TOKEN_FN, None,
                                                      _ffi.NULL_FREE_FN)),
        ("cc_controller_hint", lambda: lib.cc_controller_hint(h, BAD)),
        ("cc_controller_hint", lambda: lib.cc_controller_hint(h, b"someone-else")),
        ("cc_controller_forget_user",
         lambda: lib.cc_controller_forget_user(None, h, BAD, 1, 1.0)),
        ("cc_controller_forget_user",
         lambda: lib.cc_controller_forget_user(None, h, b"nobody", 7, 1.0)),
        ("cc_controller_forget_user",
         lambda: lib.cc_controller_forget_user(None, h, b"nobody", 0, float("nan"))),
        ("cc_controller_export_user", lambda: lib.cc_controller_export_user(None, h, None)),
        ("cc_controller_export_user",
         lambda: lib.cc_controller_export_user(ctypes.byref(OUT()), h, BAD)),
    ]
    return [(name, call) for name, call in calls if _ffi.has(name)]


def config_probes(c: int) -> list[tuple[str, Callable[[], Any]]]:
    """(function, call) pairs on configuration handle c: NULL and invalid arguments."""
    return [
        ("cc_config_set_string", lambda: lib.cc_config_set_string(c, None, b"u")),
        ("cc_config_set_string", lambda: lib.cc_config_set_string(c, b"userId", None)),
        ("cc_config_set_string", lambda: lib.cc_config_set_string(c, b"userId", BAD)),
        ("cc_config_set_string", lambda: lib.cc_config_set_string(c, b"source..file", b"f")),
        ("cc_config_set_string", lambda: lib.cc_config_set_string(c, b"userid", b"u")),
        ("cc_config_set_string", lambda: lib.cc_config_set_string(c, b"userId.x", b"u")),
        ("cc_config_set_number", lambda: lib.cc_config_set_number(c, b"timeoutSeconds",
                                                                  float("nan"))),
        ("cc_config_set_number", lambda: lib.cc_config_set_number(c, b"nope", 1.0)),
        ("cc_config_set_bool", lambda: lib.cc_config_set_bool(c, None, 1)),
        ("cc_config_append_string", lambda: lib.cc_config_append_string(c, b"userId", b"t")),
        ("cc_config_append_string",
         lambda: lib.cc_config_append_string(c, b"knownClassTypes", BAD)),
        ("cc_config_json", lambda: lib.cc_config_json(None, c)),
    ]


def snapshot_probes(s: int) -> list[tuple[str, Callable[[], Any]]]:
    out_s, i64, b, d, present, size = (ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int(),
                                       ctypes.c_double(), ctypes.c_int(), ctypes.c_size_t())
    return [
        ("cc_snapshot_count", lambda: lib.cc_snapshot_count(None, s)),
        ("cc_snapshot_string", lambda: lib.cc_snapshot_string(None, s, 0, b"id")),
        ("cc_snapshot_string", lambda: lib.cc_snapshot_string(ctypes.byref(out_s), s, 0, None)),
        ("cc_snapshot_string", lambda: lib.cc_snapshot_string(ctypes.byref(out_s), s, 99, b"id")),
        ("cc_snapshot_int", lambda: lib.cc_snapshot_int(None, s, 0, b"created")),
        ("cc_snapshot_int", lambda: lib.cc_snapshot_int(ctypes.byref(i64), s, 0, b"title")),
        ("cc_snapshot_bool", lambda: lib.cc_snapshot_bool(None, s, 0, b"viewed")),
        ("cc_snapshot_bool", lambda: lib.cc_snapshot_bool(ctypes.byref(b), s, 0, b"nope")),
        ("cc_snapshot_double", lambda: lib.cc_snapshot_double(None, None, s, 0,
                                                              b"imageAspectRatio")),
        ("cc_snapshot_double", lambda: lib.cc_snapshot_double(ctypes.byref(d),
                                                              ctypes.byref(present), s, 0, b"id")),
        ("cc_snapshot_extra", lambda: lib.cc_snapshot_extra(None, s, 0, b"class_type")),
        ("cc_snapshot_extra", lambda: lib.cc_snapshot_extra(ctypes.byref(out_s), s, 0, None)),
        ("cc_snapshot_extras_count", lambda: lib.cc_snapshot_extras_count(None, s, 0)),
        ("cc_snapshot_extra_at", lambda: lib.cc_snapshot_extra_at(None, None, s, 0, 0)),
        ("cc_snapshot_extra_at", lambda: lib.cc_snapshot_extra_at(
            ctypes.byref(out_s), ctypes.byref(out_s), s, 0, 99)),
        ("cc_snapshot_close", lambda: lib.cc_snapshot_close(None)),
    ]


def check(name: str, code: int, seen: list[str]) -> None:
    allowed = DOCUMENTED.get(name)
    assert allowed is not None, f"{name} documents no statuses"
    if code not in allowed:
        seen.append(f"{name} returned {STATUS_NAMES.get(code, code)}, which its comment "
                    f"does not list")


def test_every_function_with_statuses_documents_them() -> None:
    declared = set(_ffi.SIGNATURES)
    plain = {"cc_version", "cc_abi_version", "cc_last_error_message", "cc_last_error_code",
             "cc_last_error_retry_after", "cc_status_name", "cc_string_free",
             "cc_set_log_handler"}
    assert declared - plain - set(DOCUMENTED) == set()


def test_statuses_of_live_and_misused_calls_are_listed() -> None:
    h = open_controller()
    problems: list[str] = []
    try:
        for name, call in probes(h):
            check(name, status(call), problems)
        snap = _ffi.controller_snapshot(h, None)
        for name, call in snapshot_probes(snap):
            check(name, status(call), problems)
        _ffi.snapshot_close(snap)
        for name, call in snapshot_probes(snap):   # a closed snapshot
            check(name, status(call), problems)
    finally:
        lib.cc_controller_close(h)
    config = _ffi.handle_t()
    lib.cc_config_new(ctypes.byref(config))
    for name, call in config_probes(int(config.value)):
        check(name, status(call), problems)
    check("cc_config_close", status(lambda: lib.cc_config_close(config)), problems)
    for name, call in config_probes(int(config.value)):   # a closed configuration
        check(name, status(call), problems)
    check("cc_config_close", status(lambda: lib.cc_config_close(config)), problems)
    for name, call in probes(h):   # a closed controller
        if name not in ("cc_controller_open", "cc_transport_response_set",
                        "cc_transport_response_fail", "cc_token_response_set",
                        "cc_token_response_fail"):
            check(name, status(call), problems)
    for name, call in probes(0x7FFF_0000_00C1):   # never issued
        check(name, status(call), problems)
    assert problems == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_statuses_on_a_controller_inherited_across_fork() -> None:
    h = open_controller()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: every call on the inherited handle
        try:
            problems: list[str] = []
            for name, call in probes(h):
                if name not in ("cc_controller_open", "cc_transport_response_set",
                                "cc_transport_response_fail", "cc_token_response_set",
                                "cc_token_response_fail"):
                    check(name, status(call), problems)
            os.write(write, "\n".join(problems).encode() or b"ok")
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        report = f.read().decode()
    os.waitpid(pid, 0)
    lib.cc_controller_close(h)
    assert report == "ok", report


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
