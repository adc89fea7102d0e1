# samsa-partitioner.so: the librdkafka plugin that partitions with a samsa
# partitioner (a Lua script through the lua module, built in, or a
# partitioner module). Built when librdkafka's headers are there;
# installed next to the modules (pkglibdir). Exports only conf_init.
if HAVE_RDKAFKA
pkglib_LTLIBRARIES += tools/rdkafka-partitioner/samsa-partitioner.la
endif
tools_rdkafka_partitioner_samsa_partitioner_la_SOURCES = tools/rdkafka-partitioner/samsa-partitioner.c \
	$(LUA_MODULE_SOURCES)
tools_rdkafka_partitioner_samsa_partitioner_la_CPPFLAGS = $(MODULE_STATIC_CPPFLAGS)
tools_rdkafka_partitioner_samsa_partitioner_la_CFLAGS = $(MODULE_CFLAGS) $(LUA_CFLAGS) $(RDKAFKA_CFLAGS)
tools_rdkafka_partitioner_samsa_partitioner_la_LDFLAGS = -module -avoid-version -shared -no-undefined -Wl,-z,defs \
	-export-symbols-regex '^conf_init$$' $(SAN_CFLAGS)
tools_rdkafka_partitioner_samsa_partitioner_la_LIBADD = $(LUA_LIBS) $(RDKAFKA_LIBS)
