# The outbound client against a real samsa from this build tree.
check_PROGRAMS += tests/unit/kclient_test
TESTS += tests/unit/kclient_test
tests_unit_kclient_test_CFLAGS = $(UNIT_CFLAGS) $(LIBEV_CFLAGS)
tests_unit_kclient_test_LDADD = $(UNIT_LIBS)

# Parking: keyed wake-ups, deadlines, cancellation on close.
check_PROGRAMS += tests/unit/park_test
TESTS += tests/unit/park_test
tests_unit_park_test_CFLAGS = $(UNIT_CFLAGS) $(LIBEV_CFLAGS)
tests_unit_park_test_LDADD = $(UNIT_LIBS)

# ssl.principal.mapping.rules: parsing and mapping (net/tls_rules.c).
check_PROGRAMS += tests/unit/tls_rules_test
TESTS += tests/unit/tls_rules_test
tests_unit_tls_rules_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_tls_rules_test_LDADD = $(UNIT_LIBS)

# Request frame buffers a worker keeps for reuse (net/framepool.c).
check_PROGRAMS += tests/unit/framepool_test
TESTS += tests/unit/framepool_test
tests_unit_framepool_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_framepool_test_LDADD = $(UNIT_LIBS)

# The offload thread: jobs in order, done and notified, freed once by
# whichever of the thread and the submitter comes last (net/offload.c).
check_PROGRAMS += tests/unit/offload_test
TESTS += tests/unit/offload_test
tests_unit_offload_test_CFLAGS = $(UNIT_CFLAGS) $(LIBEV_CFLAGS)
tests_unit_offload_test_LDADD = $(UNIT_LIBS)

# The metrics endpoint's HTTP server and request parser (net/http.c,
# net/http_head.c), and api/prometheus.c's metric names.
check_PROGRAMS += tests/unit/http_test
TESTS += tests/unit/http_test
tests_unit_http_test_CFLAGS = $(UNIT_CFLAGS) $(LIBEV_CFLAGS)
tests_unit_http_test_LDADD = $(UNIT_LIBS)
