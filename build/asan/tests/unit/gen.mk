# Codec round trips over every generated message (see tools/protogen).
check_PROGRAMS += tests/unit/proto_roundtrip_test
TESTS += tests/unit/proto_roundtrip_test
tests_unit_proto_roundtrip_test_SOURCES = tests/unit/proto_roundtrip_test.c tests/unit/gen/gen_fill.c tests/unit/gen/gen_fill.h
tests_unit_proto_roundtrip_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_proto_roundtrip_test_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
tests_unit_proto_roundtrip_test_LDADD = $(UNIT_LIBS)

check_PROGRAMS += tests/unit/proto_golden_test
TESTS += tests/unit/proto_golden_test
tests_unit_proto_golden_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_proto_golden_test_LDADD = $(UNIT_LIBS)
