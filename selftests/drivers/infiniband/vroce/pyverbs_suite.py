#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run rdma-core's pyverbs test suite on one device and record each result.

  pyverbs_suite.py SUITE_DIR RESULTS [--dev DEV] [--gid N] [run_tests.py args]

SUITE_DIR is a directory named "tests" holding the suite uncompressed (Debian
ships most of /usr/share/doc/rdma-core/tests gzipped). It is loaded the way
its own run_tests.py does, with two changes that do not touch the suite:

  - RDMATestCase finds a device's netdev with "rdma link show" (what
    rdma-core v45 and later do) instead of
    /sys/class/infiniband/DEV/device/net/, which soft devices lack; without
    it v44 skips every rdmacm test on rdma_rxe and vroce alike;
  - each test gets PYVERBS_TEST_TIMEOUT seconds (default 120): SIGALRM
    then makes it an error, so one hung test costs minutes, not the run.

RESULTS gets one line per test as it ends (a run killed half way leaves
the results so far): "<outcome> <test id>", outcome one of pass, fail,
error, skip, xfail, xpass; a skip's line ends with " # <reason>".
RESULTS.tb gets the traceback of each failure and error. unittest's own
report (with -v, one line per test and the summary "Ran N tests") goes to
stderr as usual.
"""

import json
import os
import signal
import subprocess
import sys
import unittest
from importlib.machinery import SourceFileLoader

TIMEOUT = int(os.environ.get("PYVERBS_TEST_TIMEOUT", "120"))


class TestTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise TestTimeout("test took more than %d s" % TIMEOUT)


def rdma_link_netdev(dev, port=1):
    out = subprocess.check_output(["rdma", "-j", "link", "show",
                                   "%s/%d" % (dev, port)])
    return json.loads(out.decode())[0]["netdev"]


def patch_netdev_lookup(base):
    cls = base.RDMATestCase

    def get_ip_mac(self, dev, port, idx):
        try:
            net_name = rdma_link_netdev(dev, port)
            ip_addr, mac_addr = self.get_ip_mac_address(net_name)
        except (subprocess.CalledProcessError, KeyError, IndexError,
                ValueError):
            self.args.append([dev, port, idx, None, None])
        else:
            self.args.append([dev, port, idx, ip_addr, mac_addr])

    cls._get_ip_mac = get_ip_mac


class Result(unittest.TextTestResult):
    out = None      # the RESULTS file, written as results come
    tb = None       # RESULTS.tb: the traceback of each failure and error

    def startTest(self, test):
        signal.alarm(TIMEOUT)
        super().startTest(test)

    def stopTest(self, test):
        signal.alarm(0)
        super().stopTest(test)

    def record(self, what, test, name=None, err=None, why=None):
        name = name or test.id()
        why = " # " + " ".join(str(why).split()) if why else ""
        self.out.write("%s %s%s\n" % (what, name, why))
        self.out.flush()
        if err:
            self.tb.write("=== %s %s\n%s" % (what, name,
                                             self._exc_info_to_string(err,
                                                                      test)))
            self.tb.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self.record("pass", test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.record("fail", test, err=err)

    def addError(self, test, err):
        super().addError(test, err)
        # setUpClass errors and the like come as _ErrorHolder: no id().
        self.record("error", test, getattr(test, "description", None), err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.record("skip", test, why=reason or "no reason given")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.record("xfail", test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.record("xpass", test)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    suite_dir = os.path.abspath(sys.argv[1])
    results = sys.argv[2]
    sys.argv = [os.path.join(suite_dir, "run_tests.py")] + sys.argv[3:]
    sys.path.insert(0, suite_dir)

    from args_parser import parser  # the suite's own

    tests = SourceFileLoader("tests", os.path.join(suite_dir, "__init__.py")) \
        .load_module()
    parser.parse_args()
    patch_netdev_lookup(sys.modules["tests.base"])
    signal.signal(signal.SIGALRM, on_alarm)

    suite = unittest.defaultTestLoader.loadTestsFromModule(tests)
    if len(sys.argv) > 1:
        # Names left on the command line select tests, as in run_tests.py.
        suite = unittest.defaultTestLoader.loadTestsFromNames(sys.argv[1:],
                                                              tests)
    with open(results, "w") as Result.out, \
            open(results + ".tb", "w") as Result.tb:
        runner = unittest.TextTestRunner(verbosity=2, resultclass=Result)
        runner.run(suite)


if __name__ == "__main__":
    main()
