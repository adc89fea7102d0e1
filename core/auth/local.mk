core_libsamsacore_a_SOURCES += \
	core/auth/acl.c core/auth/acl.h \
	core/auth/authz.c core/auth/authz.h \
	core/auth/sasl.c core/auth/sasl.h
# CreateAcls, DescribeAcls, DeleteAcls (core/api), listed here by their
# author so that core/api/local.mk stays the lead's.
core_libsamsacore_a_SOURCES += core/api/acls.c
