# assignor-range: Kafka's KIP-848 server-side assignor "range"; no library.
if MOD_ASSIGNOR_RANGE_DYNAMIC
pkglib_LTLIBRARIES += modules/assignor-range.la
endif
if MOD_ASSIGNOR_RANGE_STATIC
noinst_LIBRARIES += modules/libassignor-range-static.a
STATIC_MODULE_LIBS += modules/libassignor-range-static.a
endif
modules_assignor_range_la_SOURCES = modules/assignor-range/range.c
modules_assignor_range_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_assignor_range_la_CFLAGS = $(MODULE_CFLAGS)
modules_assignor_range_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_libassignor_range_static_a_SOURCES = modules/assignor-range/range.c
modules_libassignor_range_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libassignor_range_static_a_CFLAGS = $(MODULE_CFLAGS)
