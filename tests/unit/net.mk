# The outbound client against a real samsa from this build tree.
check_PROGRAMS += tests/unit/kclient_test
TESTS += tests/unit/kclient_test
tests_unit_kclient_test_CFLAGS = $(UNIT_CFLAGS) $(LIBEV_CFLAGS)
tests_unit_kclient_test_LDADD = $(UNIT_LIBS)
