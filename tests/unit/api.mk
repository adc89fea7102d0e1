# unit tests: request-handling state below the handlers
# The fetch session cache (api/fetch_session.c): its bound
# (max.incremental.fetch.session.cache.slots) and KIP-227's eviction rules.
check_PROGRAMS += tests/unit/fetch_session_test
TESTS += tests/unit/fetch_session_test
tests_unit_fetch_session_test_SOURCES = tests/unit/fetch_session_test.c
tests_unit_fetch_session_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_fetch_session_test_LDADD = $(UNIT_LIBS)
