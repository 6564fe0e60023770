#!/bin/sh
# tests/memif-xfer.sh with the client in memif's zero-copy mode: every
# operation at 0 B..4 MiB, data verified, the capture checked.
MEMIF_ZC=1 exec sh "$(dirname "$0")/memif-xfer.sh"
