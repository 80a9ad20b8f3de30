# uninstall.cmake - `make uninstall`: removes what `make install` put under
# ROOT (DESTDIR and PREFIX together), by the manifest the install left
# there (install-end.cmake): its files, then the directories the install
# made, deepest first, when nothing else is left in them.
#
# usage: cmake -DROOT=DIR -P cmake/uninstall.cmake
if(NOT ROOT)
  message(FATAL_ERROR "uninstall: give -DROOT=DESTDIR+PREFIX")
endif()
file(GLOB _manifests "${ROOT}/share/teller/install_manifest.txt" "${ROOT}/*/teller/install_manifest.txt")
list(LENGTH _manifests _n)
if(_n EQUAL 0)
  message(FATAL_ERROR "uninstall: ${ROOT}: no teller install here (no share/teller/install_manifest.txt)")
endif()
list(GET _manifests 0 _manifest)
file(STRINGS "${_manifest}" _lines)
set(_dirs "")
foreach(_l IN LISTS _lines)
  if(_l MATCHES "^file (.+)$")
    if(EXISTS "${ROOT}/${CMAKE_MATCH_1}" OR IS_SYMLINK "${ROOT}/${CMAKE_MATCH_1}")
      message(STATUS "Removing: ${ROOT}/${CMAKE_MATCH_1}")
      file(REMOVE "${ROOT}/${CMAKE_MATCH_1}")
    endif()
  elseif(_l MATCHES "^dir (.+)$")
    list(APPEND _dirs "${CMAKE_MATCH_1}")
  endif()
endforeach()
# deepest first: a longer path inside a shorter one sorts after it
list(SORT _dirs)
list(REVERSE _dirs)
foreach(_d IN LISTS _dirs)
  file(GLOB _left "${ROOT}/${_d}/*" "${ROOT}/${_d}/.*")
  if(IS_DIRECTORY "${ROOT}/${_d}" AND NOT _left)
    message(STATUS "Removing: ${ROOT}/${_d}/")
    file(REMOVE_RECURSE "${ROOT}/${_d}")
  endif()
endforeach()
