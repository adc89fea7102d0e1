# codec-lz4: Kafka compression codec "lz4" (lib: $(LZ4_LIBS)).
if MOD_CODEC_LZ4_DYNAMIC
pkglib_LTLIBRARIES += modules/codec-lz4.la
endif
if MOD_CODEC_LZ4_STATIC
noinst_LIBRARIES += modules/libcodec-lz4-static.a
STATIC_MODULE_LIBS += modules/libcodec-lz4-static.a $(LZ4_LIBS)
endif
modules_codec_lz4_la_SOURCES = modules/codec-lz4/lz4.c
modules_codec_lz4_la_CPPFLAGS = $(MODULE_CPPFLAGS)
modules_codec_lz4_la_CFLAGS = $(MODULE_CFLAGS) $(LZ4_CFLAGS)
modules_codec_lz4_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_codec_lz4_la_LIBADD = $(LZ4_LIBS)
modules_libcodec_lz4_static_a_SOURCES = modules/codec-lz4/lz4.c
modules_libcodec_lz4_static_a_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
modules_libcodec_lz4_static_a_CFLAGS = $(MODULE_CFLAGS) $(LZ4_CFLAGS)
