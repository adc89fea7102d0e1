# lua: the Lua host, authorizer "lua" and partitioner "lua" (lib: $(LUA_LIBS)).
LUA_MODULE_SOURCES = modules/lua/lua.c modules/lua/module.h modules/lua/authz.c modules/lua/partition.c \
	modules/lua/script.c modules/lua/script.h modules/lua/sandbox.c modules/lua/sandbox.h
if MOD_LUA_DYNAMIC
pkglib_LTLIBRARIES += modules/lua.la
endif
if MOD_LUA_STATIC
noinst_LIBRARIES += modules/liblua-static.a
STATIC_MODULE_LIBS += modules/liblua-static.a $(LUA_LIBS)
endif
modules_lua_la_SOURCES = $(LUA_MODULE_SOURCES)
modules_lua_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_lua_la_CFLAGS = $(MODULE_CFLAGS) $(LUA_CFLAGS)
modules_lua_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_lua_la_LIBADD = $(LUA_LIBS)
modules_liblua_static_a_SOURCES = $(LUA_MODULE_SOURCES)
modules_liblua_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_liblua_static_a_CFLAGS = $(MODULE_CFLAGS) $(LUA_CFLAGS)
# The example scripts, installed for operators to copy ($(pkgdatadir)/lua).
luaauthzdir = $(pkgdatadir)/lua/authz
dist_luaauthz_DATA = lua/authz/tenant.lua lua/authz/readonly.lua lua/authz/maintenance.lua lua/authz/listeners.lua \
	lua/authz/README.md
luapartitionersdir = $(pkgdatadir)/lua/partitioners
dist_luapartitioners_DATA = lua/partitioners/prefix.lua lua/partitioners/murmur2.lua lua/partitioners/tenant.lua
