# meta.properties of log directories.
core_libsamsacore_a_SOURCES += \
	core/log/meta_properties.c core/log/meta_properties.h
