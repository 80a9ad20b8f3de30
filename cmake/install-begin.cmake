# install-begin.cmake - the first step of `cmake --install` (CMakeLists.txt):
# notes which of the directories teller installs into do not exist yet, so
# that uninstalling (uninstall.cmake) removes those again and no others.
# Directories an earlier install of teller made (its manifest) count as
# made by this one.
set(TELLER_ROOT "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
set(TELLER_CREATED_DIRS "")
if(EXISTS "${TELLER_ROOT}/${TELLER_MANIFEST}")
  file(STRINGS "${TELLER_ROOT}/${TELLER_MANIFEST}" _teller_old REGEX "^dir ")
  foreach(_l IN LISTS _teller_old)
    string(SUBSTRING "${_l}" 4 -1 _d)
    list(APPEND TELLER_CREATED_DIRS "${_d}")
  endforeach()
endif()
foreach(_dir IN LISTS TELLER_INSTALL_DIRS)
  string(REPLACE "/" ";" _parts "${_dir}")
  set(_d "")
  foreach(_p IN LISTS _parts)
    if(_d STREQUAL "")
      set(_d "${_p}")
    else()
      set(_d "${_d}/${_p}")
    endif()
    if(NOT EXISTS "${TELLER_ROOT}/${_d}")
      list(APPEND TELLER_CREATED_DIRS "${_d}")
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES TELLER_CREATED_DIRS)
