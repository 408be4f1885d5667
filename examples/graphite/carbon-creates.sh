#!/bin/sh
# Carbon creates at most MAX_CREATES_PER_MINUTE new metrics a minute (50 in this image) and
# drops the points of the others until a later minute. Each client new to a minute's top is
# two new metrics of about 1 MB each: the limit is also what bounds the disk a spray of new
# client names can take. 600 a minute lets 300 new heavy clients a minute through (two
# events' full top, 40 each, with room to spare) and caps the growth near 36 GB a day at
# worst; raise it with the disk you give Graphite, and watch carbon's creates metric.
sed -i 's/^MAX_CREATES_PER_MINUTE = .*/MAX_CREATES_PER_MINUTE = 600/' /opt/graphite/conf/carbon.conf
