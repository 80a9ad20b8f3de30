# install-end.cmake - the last step of `cmake --install` (CMakeLists.txt):
# writes the install's manifest, every file installed and every directory
# made, relative to the prefix, into the prefix itself, so that
# `make uninstall` (uninstall.cmake) works from any build directory and
# under any DESTDIR.
set(_teller_lines "file ${TELLER_MANIFEST}\n")
foreach(_f IN LISTS CMAKE_INSTALL_MANIFEST_FILES)
  foreach(_base "${TELLER_ROOT}" "${CMAKE_INSTALL_PREFIX}")
    string(LENGTH "${_base}/" _n)
    string(SUBSTRING "${_f}" 0 ${_n} _head)
    if(_head STREQUAL "${_base}/")
      string(SUBSTRING "${_f}" ${_n} -1 _rel)
      string(APPEND _teller_lines "file ${_rel}\n")
      break()
    endif()
  endforeach()
endforeach()
foreach(_d IN LISTS TELLER_CREATED_DIRS)
  string(APPEND _teller_lines "dir ${_d}\n")
endforeach()
file(WRITE "${TELLER_ROOT}/${TELLER_MANIFEST}" "${_teller_lines}")
message(STATUS "Manifest: ${TELLER_ROOT}/${TELLER_MANIFEST}")
