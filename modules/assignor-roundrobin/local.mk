# assignor-roundrobin: example server-side assignor "roundrobin" (KIP-848); no library.
if MOD_ASSIGNOR_ROUNDROBIN_DYNAMIC
pkglib_LTLIBRARIES += modules/assignor-roundrobin.la
endif
if MOD_ASSIGNOR_ROUNDROBIN_STATIC
noinst_LIBRARIES += modules/libassignor-roundrobin-static.a
STATIC_MODULE_LIBS += modules/libassignor-roundrobin-static.a
endif
modules_assignor_roundrobin_la_SOURCES = modules/assignor-roundrobin/roundrobin.c
modules_assignor_roundrobin_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_assignor_roundrobin_la_CFLAGS = $(MODULE_CFLAGS)
modules_assignor_roundrobin_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_libassignor_roundrobin_static_a_SOURCES = modules/assignor-roundrobin/roundrobin.c
modules_libassignor_roundrobin_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libassignor_roundrobin_static_a_CFLAGS = $(MODULE_CFLAGS)
