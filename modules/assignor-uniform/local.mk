# assignor-uniform: Kafka's KIP-848 server-side assignor "uniform"; no library.
if MOD_ASSIGNOR_UNIFORM_DYNAMIC
pkglib_LTLIBRARIES += modules/assignor-uniform.la
endif
if MOD_ASSIGNOR_UNIFORM_STATIC
noinst_LIBRARIES += modules/libassignor-uniform-static.a
STATIC_MODULE_LIBS += modules/libassignor-uniform-static.a
endif
modules_assignor_uniform_la_SOURCES = modules/assignor-uniform/uniform.c
modules_assignor_uniform_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_assignor_uniform_la_CFLAGS = $(MODULE_CFLAGS)
modules_assignor_uniform_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_libassignor_uniform_static_a_SOURCES = modules/assignor-uniform/uniform.c
modules_libassignor_uniform_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libassignor_uniform_static_a_CFLAGS = $(MODULE_CFLAGS)
