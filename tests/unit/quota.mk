# unit tests: client quotas
# the sampled rate (util/rate.c) and the resolution of a client's quota
# in the image (controller/quotas.c)
check_PROGRAMS += tests/unit/quota_test
TESTS += tests/unit/quota_test
tests_unit_quota_test_SOURCES = tests/unit/quota_test.c
tests_unit_quota_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_quota_test_LDADD = $(UNIT_LIBS)
# AlterClientQuotas against a real controller: records written, nothing
# for validate_only or unchanged values, replay and snapshots
check_PROGRAMS += tests/unit/quota_ctl_test
TESTS += tests/unit/quota_ctl_test
tests_unit_quota_ctl_test_SOURCES = tests/unit/quota_ctl_test.c
tests_unit_quota_ctl_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_quota_ctl_test_LDADD = $(UNIT_LIBS)
