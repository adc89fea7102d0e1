# sasl-plain: SASL mechanism "PLAIN" (RFC 4616); no library.
if MOD_SASL_PLAIN_DYNAMIC
pkglib_LTLIBRARIES += modules/sasl-plain.la
endif
if MOD_SASL_PLAIN_STATIC
noinst_LIBRARIES += modules/libsasl-plain-static.a
STATIC_MODULE_LIBS += modules/libsasl-plain-static.a
endif
modules_sasl_plain_la_SOURCES = modules/sasl-plain/plain.c
modules_sasl_plain_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_sasl_plain_la_CFLAGS = $(MODULE_CFLAGS)
modules_sasl_plain_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_libsasl_plain_static_a_SOURCES = modules/sasl-plain/plain.c
modules_libsasl_plain_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libsasl_plain_static_a_CFLAGS = $(MODULE_CFLAGS)
