#!/bin/sh
# Carbon creates at most MAX_CREATES_PER_MINUTE new metrics a minute (50 in this image) and
# drops the points of the others until a later minute: each client new to the top is two new
# metrics, so a burst of new clients would lose their counts. Whisper files are created with
# fallocate on Linux, quickly; lift the limit.
sed -i 's/^MAX_CREATES_PER_MINUTE = .*/MAX_CREATES_PER_MINUTE = inf/' /opt/graphite/conf/carbon.conf
