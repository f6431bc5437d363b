# Install paths that CMake's own install rules get wrong for some CMAKE_INSTALL_LIBDIR /
# CMAKE_INSTALL_INCLUDEDIR: each may be relative (to the prefix, any depth: lib/x86_64-linux-gnu,
# include/contentcards-1) or absolute. Included by CMakeLists.txt at configure time and by the
# install script at install time, when the prefix that `cmake --install --prefix DIR` was given
# is known. Tests/install/run.sh installs four layouts and builds a program against each.

# cc_pkgconfig_paths(<install prefix> <libdir> <includedir>): the paths of contentcards.pc.
function(cc_pkgconfig_paths prefix libdir includedir)
  if(NOT IS_ABSOLUTE "${prefix}")
    get_filename_component(prefix "${prefix}" ABSOLUTE)
  endif()
  cmake_path(NORMAL_PATH prefix)
  string(REGEX REPLACE "(.)/+$" "\\1" prefix "${prefix}")
  if(IS_ABSOLUTE "${libdir}")
    set(pc_prefix "${prefix}")
  else()
    set(pcdir "${prefix}/${libdir}/pkgconfig")
    cmake_path(NORMAL_PATH pcdir)
    file(RELATIVE_PATH up "${pcdir}" "${prefix}")
    if(up STREQUAL "")
      set(pc_prefix "\${pcfiledir}")
    else()
      set(pc_prefix "\${pcfiledir}/${up}")
    endif()
  endif()
  foreach(kind libdir includedir)
    if(IS_ABSOLUTE "${${kind}}")
      set(path "${${kind}}")
      cmake_path(NORMAL_PATH path)
      string(REGEX REPLACE "(.)/+$" "\\1" path "${path}")
      set(pc_${kind} "${path}")
    else()
      set(pc_${kind} "\${prefix}/${${kind}}")
    endif()
  endforeach()
  set(CC_PC_PREFIX "${pc_prefix}" PARENT_SCOPE)
  set(CC_PC_LIBDIR "${pc_libdir}" PARENT_SCOPE)
  set(CC_PC_INCLUDEDIR "${pc_includedir}" PARENT_SCOPE)
endfunction()

# cc_fix_import_prefix(<targets file> <configured prefix> <install prefix>): an export installed
# into an absolute LIBDIR is taken by CMake as not relocatable, and its targets file sets
# _IMPORT_PREFIX to the prefix configured, not to the one the install is made with, so a
# relative INCLUDEDIR would point into the configured prefix. Written with the install's prefix
# instead (nothing to do when the two are the same).
function(cc_fix_import_prefix targets configured prefix)
  if(NOT EXISTS "${targets}")
    message(FATAL_ERROR "contentcards: ${targets} was not installed")
  endif()
  string(REGEX REPLACE "(.)/+$" "\\1" configured "${configured}")
  string(REGEX REPLACE "(.)/+$" "\\1" prefix "${prefix}")
  if(configured STREQUAL prefix)
    return()
  endif()
  file(READ "${targets}" text)
  set(old "set(_IMPORT_PREFIX \"${configured}\")")
  string(FIND "${text}" "${old}" at)
  if(at EQUAL -1)
    message(WARNING "contentcards: no '${old}' in ${targets}: its include directory may name ${configured}")
    return()
  endif()
  string(REPLACE "${old}" "set(_IMPORT_PREFIX \"${prefix}\")" text "${text}")
  file(WRITE "${targets}" "${text}")
endfunction()
