# Modules shipped with samsa (ARCHITECTURE.md section 7), chosen per site
# with ./configure --with-modules=LIST and --enable-MODULE=no|static|dynamic.
#
# A module compiles against include/samsa only: its CPPFLAGS replace
# AM_CPPFLAGS (which names core/), links with -z defs (a reference to a
# core symbol fails the link instead of the dlopen), and exports only
# samsa_plugin_entry. check-module-isolation, run by `make check`, keeps
# it that way. A dynamic module is pkglib_LTLIBRARIES (.so in
# $(pkglibdir)); a static one is an archive compiled with
# -DSAMSA_PLUGIN_STATIC and linked into every program through CORE_LIBS.
MODULE_CPPFLAGS = -I$(top_srcdir)/include -DSAMSA_MODULE_VERSION='"$(PACKAGE_VERSION)"'
MODULE_CFLAGS = -std=c11 $(WARN_CFLAGS) $(SAN_CFLAGS) $(PTHREAD_FLAGS) -fvisibility=hidden
MODULE_LDFLAGS = -module -avoid-version -shared -no-undefined -Wl,-z,defs \
	-export-symbols-regex '^samsa_plugin_entry$$' $(SAN_CFLAGS)
MODULE_STATIC_CPPFLAGS = $(MODULE_CPPFLAGS) -DSAMSA_PLUGIN_STATIC
pkglib_LTLIBRARIES =
STATIC_MODULE_LIBS =

include modules/codec-gzip/local.mk
include modules/codec-snappy/local.mk
include modules/codec-lz4/local.mk
include modules/codec-zstd/local.mk
include modules/sasl-plain/local.mk
include modules/sasl-scram/local.mk
include modules/sasl-oauthbearer/local.mk
include modules/lua/local.mk
include modules/assignor-uniform/local.mk
include modules/assignor-range/local.mk
include modules/assignor-roundrobin/local.mk

EXTRA_DIST += modules/README.md

.PHONY: check-module-isolation
check-module-isolation:
	@case ' $(MODULE_CPPFLAGS) $(MODULE_CFLAGS) ' in \
	  *'/core'*) echo "modules: MODULE_CPPFLAGS/CFLAGS must not name core/"; exit 1;; esac
	@if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
	    $(top_srcdir)/modules/*/*.[ch] $(top_srcdir)/plugins/*/*.[ch] 2>/dev/null | \
	    grep -vE '"samsa/[a-z_]+\.h"' | \
	    while IFS=: read -r f l inc; do \
	      h=`echo "$$inc" | sed -n 's/.*"\([a-z_]*\.h\)".*/\1/p'`; \
	      if [ -n "$$h" ] && [ -f "`dirname $$f`/$$h" ]; then continue; fi; \
	      echo "$$f:$$l:$$inc"; done | grep .; then \
	  echo "modules and plugins may include only samsa/*.h of the public ABI (and headers of their own folder)"; exit 1; fi
	@echo "modules: include isolation OK"

# Only the sources of the modules this build includes go into the tarball
# (its configure builds the modules whose sources it finds). A left-out
# module keeps its local.mk, which Makefile.in was generated from.
dist-hook:
	@for m in codec-gzip codec-snappy codec-lz4 codec-zstd sasl-plain sasl-scram sasl-oauthbearer lua assignor-uniform assignor-range assignor-roundrobin; do \
	  case ",$(SAMSA_BUILD_MODULES)," in *",$$m,"*) ;; *) \
	    echo "dist: leaving out module $$m"; \
	    find "$(distdir)/modules/$$m" -type f ! -name local.mk -exec rm -f {} +;; esac; \
	done
