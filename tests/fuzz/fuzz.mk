# Fuzz targets (libFuzzer). Plain make rules rather than automake programs:
# they need clang and its fuzzer runtime whatever CC configure chose.
#   make fuzz                       build every target
#   make fuzz-run [FUZZ_SECONDS=n]  run each for n seconds (default 30),
#                                   keeping its corpus in <target>.corpus/
# A target is tests/fuzz/<name>_fuzz.c; add it to FUZZ_TARGETS and, if it
# needs more of the core, its sources to FUZZ_CORE_SRCS.
FUZZ_CC = clang
FUZZ_CFLAGS = -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	-D_GNU_SOURCE -I $(top_srcdir)/core -I $(top_srcdir)/include -I $(top_builddir)
FUZZ_SECONDS = 30
FUZZ_CORE_SRCS = \
	core/proto/record_batch.c core/proto/crc32c.c \
	core/proto/kcodec.c core/proto/kerr.c \
	core/util/buf.c core/util/arena.c core/util/sfile.c core/util/slog.c
FUZZ_TARGETS = tests/fuzz/record_batch_fuzz tests/fuzz/request_fuzz tests/fuzz/coord_records_fuzz \
	tests/fuzz/sasl_mech_fuzz tests/fuzz/raft_msg_fuzz tests/fuzz/producer_snapshot_fuzz \
	tests/fuzz/txn_log_fuzz tests/fuzz/txnindex_fuzz tests/fuzz/sasl_client_fuzz tests/fuzz/oauthbearer_fuzz \
	tests/fuzz/http_head_fuzz

fuzz: $(FUZZ_TARGETS)

# The request decoder needs every generated codec: build them once into an
# archive rather than per target.
FUZZ_GEN_SRCS = $(wildcard $(top_srcdir)/core/proto/gen/*.c)
tests/fuzz/libgen_fuzz.a: $(FUZZ_GEN_SRCS) $(wildcard $(top_srcdir)/core/proto/gen/*.h)
	@mkdir -p tests/fuzz/gen-objs
	@echo "  CC (fuzz) core/proto/gen/*.c"
	@ls $(FUZZ_GEN_SRCS) | xargs -P $$(nproc) -I{} sh -c \
	  '$(FUZZ_CC) $(FUZZ_CFLAGS:-fsanitize=fuzzer,%=-fsanitize=fuzzer-no-link,%) -c {} -o tests/fuzz/gen-objs/$$(basename {} .c).o'
	rm -f $@ && ar rcs $@ tests/fuzz/gen-objs/*.o

tests/fuzz/request_fuzz: $(top_srcdir)/tests/fuzz/request_fuzz.c tests/fuzz/libgen_fuzz.a $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) tests/fuzz/libgen_fuzz.a -lpthread

# The coordinator's record decoding: records.c over the generated codecs.
tests/fuzz/coord_records_fuzz: $(top_srcdir)/tests/fuzz/coord_records_fuzz.c $(top_srcdir)/core/coord/records.c \
		tests/fuzz/libgen_fuzz.a $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(top_srcdir)/core/coord/records.c $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) \
		tests/fuzz/libgen_fuzz.a -lpthread

# __transaction_state records: txn_log.c and txn_meta.c over the
# generated codecs.
FUZZ_TXN_SRCS = core/coord/txn_log.c core/coord/txn_meta.c
tests/fuzz/txn_log_fuzz: $(top_srcdir)/tests/fuzz/txn_log_fuzz.c $(FUZZ_TXN_SRCS:%=$(top_srcdir)/%) \
		tests/fuzz/libgen_fuzz.a $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_TXN_SRCS:%=$(top_srcdir)/%) $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) \
		tests/fuzz/libgen_fuzz.a -lpthread

# The Raft messages of the controller listener and the quorum's clients:
# raft_msg.c over the generated codecs.
tests/fuzz/raft_msg_fuzz: $(top_srcdir)/tests/fuzz/raft_msg_fuzz.c $(top_srcdir)/core/raft/raft_msg.c \
		tests/fuzz/libgen_fuzz.a $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(top_srcdir)/core/raft/raft_msg.c $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) \
		tests/fuzz/libgen_fuzz.a -lpthread

# The SASL mechanisms' client-message parsers (the modules' sources,
# with a fake host; libcrypto for SCRAM).
tests/fuzz/sasl_mech_fuzz: $(top_srcdir)/tests/fuzz/sasl_mech_fuzz.c $(top_srcdir)/modules/sasl-plain/plain.c \
		$(top_srcdir)/modules/sasl-scram/scram.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< -lcrypto

# The OAUTHBEARER module's parsers (the module's source, pure C).
tests/fuzz/oauthbearer_fuzz: $(top_srcdir)/tests/fuzz/oauthbearer_fuzz.c \
		$(top_srcdir)/modules/sasl-oauthbearer/oauthbearer.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< -lcrypto -lpthread

# The SASL client's handling of a peer's tokens (libcrypto for SCRAM).
tests/fuzz/sasl_client_fuzz: $(top_srcdir)/tests/fuzz/sasl_client_fuzz.c $(top_srcdir)/core/net/sasl_client.c \
		$(FUZZ_CORE_SRCS:%=$(top_srcdir)/%)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(top_srcdir)/core/net/sasl_client.c $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) \
		-lcrypto -lpthread

# .txnindex files: the entry format alone.
tests/fuzz/txnindex_fuzz: $(top_srcdir)/tests/fuzz/txnindex_fuzz.c $(top_srcdir)/core/log/txnindex.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(top_srcdir)/core/log/txnindex.c

# Producer-state snapshots: producer_state.c and the hash map it uses.
FUZZ_PSTATE_SRCS = core/log/producer_state.c core/util/hmap.c
tests/fuzz/producer_snapshot_fuzz: $(top_srcdir)/tests/fuzz/producer_snapshot_fuzz.c \
		$(FUZZ_PSTATE_SRCS:%=$(top_srcdir)/%) $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_PSTATE_SRCS:%=$(top_srcdir)/%) $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) -lpthread

tests/fuzz/%_fuzz: $(top_srcdir)/tests/fuzz/%_fuzz.c $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) \
		$(wildcard $(top_srcdir)/core/proto/*.h $(top_srcdir)/core/util/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) -lpthread

fuzz-run: fuzz
	@for f in $(FUZZ_TARGETS); do \
	  mkdir -p $$f.corpus && \
	  echo "fuzzing $$f for $(FUZZ_SECONDS)s" && \
	  ./$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$$f- $$f.corpus || exit 1; \
	done

.PHONY: fuzz fuzz-run
CLEANFILES += $(FUZZ_TARGETS) tests/fuzz/libgen_fuzz.a

# The metrics endpoint's HTTP request parser.
tests/fuzz/http_head_fuzz: $(top_srcdir)/tests/fuzz/http_head_fuzz.c $(top_srcdir)/core/net/http_head.c \
		$(FUZZ_CORE_SRCS:%=$(top_srcdir)/%)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(top_srcdir)/core/net/http_head.c $(FUZZ_CORE_SRCS:%=$(top_srcdir)/%) -lpthread
