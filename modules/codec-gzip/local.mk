# codec-gzip: Kafka compression codec "gzip" (lib: $(ZLIB_LIBS)).
if MOD_CODEC_GZIP_DYNAMIC
pkglib_LTLIBRARIES += modules/codec-gzip.la
endif
if MOD_CODEC_GZIP_STATIC
noinst_LIBRARIES += modules/libcodec-gzip-static.a
STATIC_MODULE_LIBS += modules/libcodec-gzip-static.a $(ZLIB_LIBS)
endif
modules_codec_gzip_la_SOURCES = modules/codec-gzip/gzip.c
modules_codec_gzip_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_codec_gzip_la_CFLAGS = $(MODULE_CFLAGS) $(ZLIB_CFLAGS)
modules_codec_gzip_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_codec_gzip_la_LIBADD = $(ZLIB_LIBS)
modules_libcodec_gzip_static_a_SOURCES = modules/codec-gzip/gzip.c
modules_libcodec_gzip_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libcodec_gzip_static_a_CFLAGS = $(MODULE_CFLAGS) $(ZLIB_CFLAGS)
