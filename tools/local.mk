# tools: samsactl, the operator's command-line tool. It links the codecs
# and record-batch code from core/libsamsacore.a, never a copy of them.
bin_PROGRAMS += samsactl
samsactl_SOURCES = \
	tools/samsactl/main.c \
	tools/samsactl/opts.c tools/samsactl/opts.h \
	tools/samsactl/client.c tools/samsactl/client.h \
	tools/samsactl/coordinator.c tools/samsactl/coordinator.h \
	tools/samsactl/table.c tools/samsactl/table.h \
	tools/samsactl/linereader.c tools/samsactl/linereader.h \
	tools/samsactl/partitioner.c tools/samsactl/partitioner.h tools/samsactl/murmur2.h \
	tools/samsactl/topics.c tools/samsactl/topics.h \
	tools/samsactl/produce.c tools/samsactl/produce.h \
	tools/samsactl/consume.c tools/samsactl/consume.h \
	tools/samsactl/groups.c tools/samsactl/groups.h \
	tools/samsactl/dumplog.c tools/samsactl/dumplog.h \
	tools/samsactl/cluster.c tools/samsactl/cluster.h \
	tools/samsactl/quorum.c tools/samsactl/quorum.h \
	tools/samsactl/sasl.c tools/samsactl/sasl.h \
	tools/samsactl/tls.c tools/samsactl/tls.h \
	tools/samsactl/users.c tools/samsactl/users.h \
	tools/samsactl/acls.c tools/samsactl/acls.h \
	tools/samsactl/quotas.c tools/samsactl/quotas.h \
	tools/samsactl/configs.c tools/samsactl/configs.h \
	tools/samsactl/logdirs.c tools/samsactl/logdirs.h \
	tools/samsactl/transactions.c tools/samsactl/transactions.h
samsactl_LDADD = $(CORE_LIBS)
# lua_bench: the Lua authorizer and partitioner through the ABI, one
# thread, next to C floors (`make bench-lua`; built on demand only).
EXTRA_PROGRAMS = tools/bench/lua_bench
tools_bench_lua_bench_SOURCES = tools/bench/lua_bench.c tools/samsactl/partitioner.c
tools_bench_lua_bench_LDADD = $(CORE_LIBS)
.PHONY: bench-lua
bench-lua: tools/bench/lua_bench modules/lua.la
	$(builddir)/tools/bench/lua_bench $(abs_builddir)/modules/.libs $(abs_top_srcdir)/lua $${BENCH_SECONDS:-1}
# bench-scale: partitions per node (BENCH_PARTITIONS, default 100 000) and
# client connections (BENCH_CONNECTIONS, default 10 000) on one node
# started with `ulimit -Sn 1024`; prints one table (README, "Partitions
# per node"). Run by hand: it takes minutes and a few GB of /tmp.
.PHONY: bench-scale
bench-scale: samsa
	python3 $(abs_top_srcdir)/tools/bench/scale-partitions.py --samsa $(abs_builddir)/samsa
# Keyed produce through samsa-partitioner.so + murmur2.lua against
# librdkafka's murmur2_random (tools/bench/lua-produce.sh; run by hand).
.PHONY: bench-lua-produce
bench-lua-produce: samsa samsactl
	BENCH_BUILDDIR=$(abs_builddir) $(abs_top_srcdir)/tools/bench/lua-produce.sh
