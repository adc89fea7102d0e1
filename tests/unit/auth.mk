# unit tests: authorization. The ACL matcher (auth/acl.c) over ACL sets
# built from metadata records (controller/image.c), and the binding
# filters of DescribeAcls / DeleteAcls (controller/acls.c).
check_PROGRAMS += tests/unit/acl_test
TESTS += tests/unit/acl_test
tests_unit_acl_test_SOURCES = tests/unit/acl_test.c
tests_unit_acl_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_acl_test_LDADD = $(UNIT_LIBS)
