# unit tests: the lua module (modules/lua) loaded as the server loads it
# and driven through the ABI: sandbox escapes and limits, reload, threads,
# the example policies of lua/authz and partitioners of lua/partitioners.
check_PROGRAMS += tests/unit/lua_test
TESTS += tests/unit/lua_test
tests_unit_lua_test_SOURCES = tests/unit/lua_test.c
tests_unit_lua_test_CPPFLAGS = $(AM_CPPFLAGS) \
	-DMODULE_DIR='"$(abs_builddir)/modules/.libs"' -DLUA_DIR='"$(abs_top_srcdir)/lua"'
tests_unit_lua_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_lua_test_LDADD = $(UNIT_LIBS)
