# unit tests: the SASL mechanism modules (their sources compiled in with
# a fake host API): SCRAM math against RFC 5802 / RFC 7677, message
# parsing, PLAIN.
check_PROGRAMS += tests/unit/sasl_test
TESTS += tests/unit/sasl_test
tests_unit_sasl_test_SOURCES = tests/unit/sasl_test.c
EXTRA_tests_unit_sasl_test_DEPENDENCIES = $(top_srcdir)/modules/sasl-plain/plain.c $(top_srcdir)/modules/sasl-scram/scram.c \
	$(top_srcdir)/modules/sasl-oauthbearer/oauthbearer.c
tests_unit_sasl_test_CFLAGS = $(UNIT_CFLAGS) $(OPENSSL_CFLAGS)
tests_unit_sasl_test_LDADD = $(UNIT_LIBS)
# SCRAM credentials in the metadata log (controller/scram.c): validation,
# keys, replay, snapshots, and the lookup the module reads them with.
check_PROGRAMS += tests/unit/scram_ctl_test
TESTS += tests/unit/scram_ctl_test
tests_unit_scram_ctl_test_SOURCES = tests/unit/scram_ctl_test.c
tests_unit_scram_ctl_test_CFLAGS = $(UNIT_CFLAGS) $(OPENSSL_CFLAGS)
tests_unit_scram_ctl_test_LDADD = $(UNIT_LIBS)
