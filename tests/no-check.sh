#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Stands in for the Check unit tests when configure did not find Check.
echo "SKIP: Check (libcheck >= 0.11) not installed: the unit tests were not built"
echo "      (Debian: apt-get install check pkg-config, then re-run configure)"
exit 77
