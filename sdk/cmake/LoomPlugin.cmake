# loom_add_plugin(NAME SOURCES file... [LIBRARIES lib...] [OUTPUT_DIRECTORY dir] [NO_INSTALL])
#
# Builds one Loom plugin: a MODULE library named loom_NAME.so, linked against
# Loom::core, compiled as C++17 with hidden visibility (only the init entry is
# exported), with every symbol resolved at link time.  The same function
# builds the plugins in Loom's own tree and plugins built out of tree against
# an installed SDK (find_package(Loom)).
#
# Output: OUTPUT_DIRECTORY, else LOOM_PLUGIN_OUTPUT_DIRECTORY, else the
# current binary directory.  Install: <prefix>/lib/loom/plugins, where the
# core looks, unless NO_INSTALL.
include_guard(GLOBAL)
include(GNUInstallDirs)

function(loom_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "loom_add_plugin(${name}): SOURCES is required")
  endif()
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "loom_add_plugin(${name}): plugin names use lower-case letters, digits and '_'")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE Loom::core ${ARG_LIBRARIES})
  target_compile_features(${name} PRIVATE cxx_std_17)
  if(ARG_OUTPUT_DIRECTORY)
    set(output_dir ${ARG_OUTPUT_DIRECTORY})
  elseif(LOOM_PLUGIN_OUTPUT_DIRECTORY)
    set(output_dir ${LOOM_PLUGIN_OUTPUT_DIRECTORY})
  else()
    set(output_dir ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "loom_${name}"
    SUFFIX ".so"
    LIBRARY_OUTPUT_DIRECTORY ${output_dir}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN/../..")
  target_link_options(${name} PRIVATE -Wl,--no-undefined)
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${name} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/loom/plugins)
  endif()
endfunction()
