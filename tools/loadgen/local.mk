# samsa-loadgen: librdkafka-based load generator, and `make bench`, which
# runs it against a fresh server next to a floor measured in the same run.
if HAVE_RDKAFKA
bin_PROGRAMS += tools/loadgen/samsa-loadgen
tools_loadgen_samsa_loadgen_SOURCES = tools/loadgen/main.c tools/loadgen/produce.c \
	tools/loadgen/consume.c tools/loadgen/e2e.c tools/loadgen/hist.c tools/loadgen/hist.h tools/loadgen/loadgen.h
tools_loadgen_samsa_loadgen_CFLAGS = $(AM_CFLAGS) $(RDKAFKA_CFLAGS)
tools_loadgen_samsa_loadgen_LDADD = $(RDKAFKA_LIBS) -lpthread
endif

EXTRA_DIST += tools/bench/run.sh tools/bench/floor.c tools/bench/tls.sh tools/bench/authz.sh tools/bench/one-node.sh \
	tools/bench/authz_bench.c

.PHONY: bench
bench:
	BENCH_BUILDDIR=$(abs_top_builddir) $(top_srcdir)/tools/bench/run.sh
	BENCH_BUILDDIR=$(abs_top_builddir) $(top_srcdir)/tools/bench/tls.sh
	BENCH_BUILDDIR=$(abs_top_builddir) $(top_srcdir)/tools/bench/authz.sh
