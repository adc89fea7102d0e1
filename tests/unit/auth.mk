# unit tests: authorization. The ACL matcher (auth/acl.c) over ACL sets
# built from metadata records (controller/image.c), and the binding
# filters of DescribeAcls / DeleteAcls (controller/acls.c).
check_PROGRAMS += tests/unit/acl_test
TESTS += tests/unit/acl_test
tests_unit_acl_test_SOURCES = tests/unit/acl_test.c
tests_unit_acl_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_acl_test_LDADD = $(UNIT_LIBS)
# The authorizer chain (auth/authz.c) with a plugin authorizer: the
# fixture-authz fixture, a real shared object the chain loads by name
# from the fixture directory.
check_LTLIBRARIES += tests/unit/plugin-fixtures/fixture-authz.la
tests_unit_plugin_fixtures_fixture_authz_la_SOURCES = tests/unit/plugin-fixtures/test_authz.c
tests_unit_plugin_fixtures_fixture_authz_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_fixture_authz_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_fixture_authz_la_LDFLAGS = $(FIXTURE_LDFLAGS)
check_PROGRAMS += tests/unit/authz_test
TESTS += tests/unit/authz_test
tests_unit_authz_test_SOURCES = tests/unit/authz_test.c
tests_unit_authz_test_CPPFLAGS = $(AM_CPPFLAGS) -DFIXTURE_DIR='"$(abs_builddir)/tests/unit/plugin-fixtures/.libs"' \
	-DMODULE_DIR='"$(abs_builddir)/modules/.libs"'
tests_unit_authz_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_authz_test_LDADD = $(UNIT_LIBS)
# ACLs in the metadata log (controller/acls.c) against a real controller:
# CreateAcls' checks, DeleteAcls' filters, replay and snapshots.
check_PROGRAMS += tests/unit/acl_ctl_test
TESTS += tests/unit/acl_ctl_test
tests_unit_acl_ctl_test_SOURCES = tests/unit/acl_ctl_test.c
tests_unit_acl_ctl_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_acl_ctl_test_LDADD = $(UNIT_LIBS)
