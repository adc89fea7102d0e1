# codec-zstd: Kafka compression codec "zstd" (lib: $(ZSTD_LIBS)).
if MOD_CODEC_ZSTD_DYNAMIC
pkglib_LTLIBRARIES += modules/codec-zstd.la
endif
if MOD_CODEC_ZSTD_STATIC
noinst_LIBRARIES += modules/libcodec-zstd-static.a
STATIC_MODULE_LIBS += modules/libcodec-zstd-static.a $(ZSTD_LIBS)
endif
modules_codec_zstd_la_SOURCES = modules/codec-zstd/zstd.c
modules_codec_zstd_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_codec_zstd_la_CFLAGS = $(MODULE_CFLAGS) $(ZSTD_CFLAGS)
modules_codec_zstd_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_codec_zstd_la_LIBADD = $(ZSTD_LIBS)
modules_libcodec_zstd_static_a_SOURCES = modules/codec-zstd/zstd.c
modules_libcodec_zstd_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libcodec_zstd_static_a_CFLAGS = $(MODULE_CFLAGS) $(ZSTD_CFLAGS)
