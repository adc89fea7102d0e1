# unit tests: plugin ABI, loader and registry, codec modules, the codec
# glue of the produce path (tests/unit/plugin_test.c).
#
# Fixtures: deliberately wrong plugins and one good plugin per released
# ABI minor (abi_1_0 is compiled against the frozen headers in
# plugin-fixtures/abi-1.0, never include/), built as real shared objects
# by `make check` (-rpath makes libtool build them shared).
FIXTURE_CPPFLAGS = -I$(top_srcdir)/include
FIXTURE_CFLAGS = -std=c11 $(WARN_CFLAGS) $(SAN_CFLAGS) -fvisibility=hidden
FIXTURE_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)/tests/unit/plugin-fixtures $(SAN_CFLAGS)

check_LTLIBRARIES = tests/unit/plugin-fixtures/no_entry.la tests/unit/plugin-fixtures/bad_magic.la \
	tests/unit/plugin-fixtures/next_major.la tests/unit/plugin-fixtures/newer_minor.la \
	tests/unit/plugin-fixtures/truncated.la tests/unit/plugin-fixtures/bad_sig.la \
	tests/unit/plugin-fixtures/init_fail.la tests/unit/plugin-fixtures/dup_cap.la \
	tests/unit/plugin-fixtures/abi_1_0.la

tests_unit_plugin_fixtures_no_entry_la_SOURCES = tests/unit/plugin-fixtures/no_entry.c tests/unit/plugin-fixtures/fixture_common.h
tests_unit_plugin_fixtures_no_entry_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_no_entry_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_no_entry_la_LDFLAGS = $(FIXTURE_LDFLAGS)
tests_unit_plugin_fixtures_bad_magic_la_SOURCES = tests/unit/plugin-fixtures/bad_magic.c tests/unit/plugin-fixtures/fixture_common.h
tests_unit_plugin_fixtures_bad_magic_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_bad_magic_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_bad_magic_la_LDFLAGS = $(FIXTURE_LDFLAGS)
tests_unit_plugin_fixtures_next_major_la_SOURCES = tests/unit/plugin-fixtures/next_major.c tests/unit/plugin-fixtures/fixture_common.h
tests_unit_plugin_fixtures_next_major_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_next_major_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_next_major_la_LDFLAGS = $(FIXTURE_LDFLAGS)
tests_unit_plugin_fixtures_newer_minor_la_SOURCES = tests/unit/plugin-fixtures/newer_minor.c tests/unit/plugin-fixtures/fixture_common.h
tests_unit_plugin_fixtures_newer_minor_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_newer_minor_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_newer_minor_la_LDFLAGS = $(FIXTURE_LDFLAGS)
tests_unit_plugin_fixtures_truncated_la_SOURCES = tests/unit/plugin-fixtures/truncated.c tests/unit/plugin-fixtures/fixture_common.h
tests_unit_plugin_fixtures_truncated_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_truncated_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_truncated_la_LDFLAGS = $(FIXTURE_LDFLAGS)
tests_unit_plugin_fixtures_bad_sig_la_SOURCES = tests/unit/plugin-fixtures/bad_sig.c tests/unit/plugin-fixtures/fixture_common.h
tests_unit_plugin_fixtures_bad_sig_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_bad_sig_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_bad_sig_la_LDFLAGS = $(FIXTURE_LDFLAGS)
tests_unit_plugin_fixtures_init_fail_la_SOURCES = tests/unit/plugin-fixtures/init_fail.c tests/unit/plugin-fixtures/fixture_common.h
tests_unit_plugin_fixtures_init_fail_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_init_fail_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_init_fail_la_LDFLAGS = $(FIXTURE_LDFLAGS)
tests_unit_plugin_fixtures_dup_cap_la_SOURCES = tests/unit/plugin-fixtures/dup_cap.c tests/unit/plugin-fixtures/fixture_common.h
tests_unit_plugin_fixtures_dup_cap_la_CPPFLAGS = $(FIXTURE_CPPFLAGS)
tests_unit_plugin_fixtures_dup_cap_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_dup_cap_la_LDFLAGS = $(FIXTURE_LDFLAGS)
# ABI 1.0, frozen: keep this fixture and its headers forever.
tests_unit_plugin_fixtures_abi_1_0_la_SOURCES = tests/unit/plugin-fixtures/abi_1_0.c
tests_unit_plugin_fixtures_abi_1_0_la_CPPFLAGS = -I$(top_srcdir)/tests/unit/plugin-fixtures/abi-1.0
tests_unit_plugin_fixtures_abi_1_0_la_CFLAGS = $(FIXTURE_CFLAGS)
tests_unit_plugin_fixtures_abi_1_0_la_LDFLAGS = $(FIXTURE_LDFLAGS)
EXTRA_DIST += tests/unit/plugin-fixtures/abi-1.0/README.md tests/unit/plugin-fixtures/abi-1.0/samsa/plugin.h \
	tests/unit/plugin-fixtures/abi-1.0/samsa/codec.h tests/unit/plugin-fixtures/abi-1.0/samsa/sasl.h \
	tests/unit/plugin-fixtures/abi-1.0/samsa/assignor.h tests/unit/plugin-fixtures/abi-1.0/samsa/tier.h \
	tests/unit/plugin-fixtures/abi-1.0/samsa/authz.h tests/unit/plugin-fixtures/abi-1.0/samsa/partitioner.h

check_PROGRAMS += tests/unit/plugin_test
TESTS += tests/unit/plugin_test
tests_unit_plugin_test_SOURCES = tests/unit/plugin_test.c
tests_unit_plugin_test_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFIXTURE_DIR='"$(abs_builddir)/tests/unit/plugin-fixtures/.libs"' \
	-DMODULE_DIR='"$(abs_builddir)/modules/.libs"'
tests_unit_plugin_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_plugin_test_LDADD = $(UNIT_LIBS)
# make check builds check_LTLIBRARIES (the fixtures) and all (the
# modules) before it runs the tests.

# Modules and plugins include only the public ABI (modules/local.mk).
check-local: check-module-isolation
