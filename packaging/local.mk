# Packaging. `make deb` builds samsa_<version>_<arch>.deb from this build
# (configure it with --prefix=/usr): the binaries, the modules this build
# includes (configure --with-modules / --enable-MODULE) and nothing else,
# the plugin headers and samsa-plugin.pc.
EXTRA_DIST += packaging/deb/mkdeb.sh

.PHONY: deb
deb: all
	$(SHELL) $(top_srcdir)/packaging/deb/mkdeb.sh "$(abs_top_builddir)" "$(PACKAGE_VERSION)" \
	  "$(SAMSA_BUILD_MODULES)" "$(abs_top_builddir)/samsa_$(PACKAGE_VERSION)_`dpkg --print-architecture`.deb"
