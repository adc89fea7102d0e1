core_libsamsacore_a_SOURCES += core/broker.h
bin_PROGRAMS += samsa
samsa_SOURCES = core/main.c
samsa_CFLAGS = $(AM_CFLAGS) $(LIBEV_CFLAGS)
samsa_LDADD = $(CORE_LIBS)
