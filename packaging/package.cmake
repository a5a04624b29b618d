# Installing and packaging (scripts/package.sh: cellgate_<version>_amd64.deb with CPack's DEB
# generator; docs/operations.md#the-debian-package). Included by the top CMakeLists.txt after
# the cellgate target.
include (GNUInstallDirs)

# The manual page, made at build time by the binary from its option table (help --man).
add_custom_command (OUTPUT ${CMAKE_BINARY_DIR}/cellgate.1.gz
    COMMAND sh -c "\"$1\" help --man | gzip -9n > \"$2\"" sh $<TARGET_FILE:cellgate> ${CMAKE_BINARY_DIR}/cellgate.1.gz
    DEPENDS cellgate
    COMMENT "cellgate.1 from the option table" VERBATIM)
add_custom_command (OUTPUT ${CMAKE_BINARY_DIR}/changelog.gz
    COMMAND sh -c "gzip -9nc < \"$1\" > \"$2\"" sh ${CMAKE_SOURCE_DIR}/CHANGELOG.md ${CMAKE_BINARY_DIR}/changelog.gz
    DEPENDS ${CMAKE_SOURCE_DIR}/CHANGELOG.md VERBATIM)
add_custom_target (cellgate_docs ALL DEPENDS ${CMAKE_BINARY_DIR}/cellgate.1.gz ${CMAKE_BINARY_DIR}/changelog.gz)

install (TARGETS cellgate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The kernel specs, with the JavaScript kernel's node_modules (tslab: not in Debian) as npm ci
# left them; the binary finds them at CELLGATE_KERNELS_DIR (scripts/package.sh sets it here).
install (DIRECTORY ${CMAKE_SOURCE_DIR}/kernels/ DESTINATION ${CMAKE_INSTALL_DATADIR}/cellgate/kernels
    USE_SOURCE_PERMISSIONS
    PATTERN ".gitignore" EXCLUDE PATTERN ".npmrc" EXCLUDE PATTERN "__pycache__" EXCLUDE
    # zeromq.js's prebuilt addons for other machines (arm64, musl): dead weight on amd64.
    REGEX "/build/linux/arm64$" EXCLUDE REGEX "/build/linux/x64/node/musl-[^/]*$" EXCLUDE)
install (FILES ${CMAKE_BINARY_DIR}/cellgate.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install (FILES ${CMAKE_BINARY_DIR}/changelog.gz ${CMAKE_SOURCE_DIR}/README.md
    DESTINATION ${CMAKE_INSTALL_DOCDIR})
install (DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install (FILES ${CMAKE_SOURCE_DIR}/packaging/cellgate.service DESTINATION lib/systemd/system)
install (FILES ${CMAKE_SOURCE_DIR}/packaging/cellgate-user.service DESTINATION lib/systemd/user
    RENAME cellgate.service)

set (CPACK_GENERATOR DEB)
set (CPACK_PACKAGE_NAME cellgate)
set (CPACK_PACKAGE_VERSION ${CELLGATE_VERSION})
set (CPACK_PACKAGING_INSTALL_PREFIX /usr)
set (CPACK_PACKAGE_DESCRIPTION_SUMMARY
     "sandboxed code execution for AI agents (MCP) and Jupyter front ends")
set (CPACK_DEBIAN_PACKAGE_DESCRIPTION
     "cellgate runs untrusted code for AI agents and for people: an MCP server (stdio and\nStreamable HTTP) and a Jupyter Kernel Gateway in one process. Every session is a\nlocked-down runc container (as root or rootless) running Jupyter kernels: Python\n(ipykernel), JavaScript (tslab, bundled), R (IRkernel), and one-shot bash.")
set (CPACK_PACKAGE_CONTACT "${CELLGATE_MAINTAINER}")
set (CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set (CPACK_DEBIAN_PACKAGE_SECTION utils)
set (CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The libraries' packages, from the binary alone (scripts/package.sh runs dpkg-shlibdeps on it:
# CPack's own SHLIBDEPS would read the bundled node_modules' addons too), then what the
# sandboxes run: an OCI runtime, catatonit (each sandbox's init), mkfs.ext4 (the workspaces'
# file systems) and the Python kernel. The rest of what docs/ describes is recommended or
# suggested.
set (CELLGATE_SHLIBS_DEPENDS "" CACHE STRING "the binary's library packages (dpkg-shlibdeps; scripts/package.sh)")
set (CPACK_DEBIAN_PACKAGE_DEPENDS
     "${CELLGATE_SHLIBS_DEPENDS}, runc | crun, catatonit, e2fsprogs, python3, python3-ipykernel, python3-jupyter-client")
set (CPACK_STRIP_FILES usr/bin/cellgate)
set (CPACK_DEBIAN_PACKAGE_RECOMMENDS
     "crun, python3-matplotlib, python3-numpy, python3-pandas, python3-seaborn, python3-scipy, python3-openpyxl, python3-reportlab, python3-sympy, python3-pip, nodejs, squid")
set (CPACK_DEBIAN_PACKAGE_SUGGESTS
     "r-cran-irkernel, r-cran-dplyr, r-cran-readr, r-cran-ggplot2, r-cran-tidyr, r-cran-data.table, jupyter-notebook, podman | docker.io")
set (CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
     ${CMAKE_SOURCE_DIR}/packaging/postinst ${CMAKE_SOURCE_DIR}/packaging/prerm
     ${CMAKE_SOURCE_DIR}/packaging/postrm)
set (CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include (CPack)
