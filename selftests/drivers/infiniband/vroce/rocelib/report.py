# SPDX-License-Identifier: GPL-2.0
"""Failed checks: printed as KTAP comments as they happen, and counted."""


FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("# FAIL: " + msg)


def expect(cond, msg):
    if not cond:
        fail(msg)
    return cond
