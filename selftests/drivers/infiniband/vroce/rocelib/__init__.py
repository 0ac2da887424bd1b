# SPDX-License-Identifier: GPL-2.0
"""The library of the vroce selftests' RoCE tools: roce.py, rx_frames.py
and stall.py."""
