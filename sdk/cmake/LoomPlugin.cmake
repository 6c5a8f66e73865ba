# loom_add_plugin(NAME SOURCES file... [LIBRARIES lib...] [OUTPUT_DIRECTORY dir] [NO_INSTALL]
#                 [NO_DECLARATIONS] [RUNTIME_ONLY])
#
# Builds one Loom plugin: a MODULE library named loom_NAME.so, linked against
# Loom::core (with RUNTIME_ONLY, Loom::runtime alone: a backend's runtime
# half, which an exported library loads without the compiler), compiled as C++17 with hidden visibility (only the init entry is
# exported), with every symbol resolved at link time.  The same function
# builds the plugins in Loom's own tree and plugins built out of tree against
# an installed SDK (find_package(Loom)).
#
# After linking, `loomc plugins declare` loads the plugin, reads what its init
# registered, and objcopy embeds that as the section .loom_declarations
# (loom/plugin.h): the plugin's capabilities and the schemas of its passes,
# target kinds, operators and config keys, declared once (in code) and read
# by listings and the config validator without loading the plugin.  So the
# build machine must be able to load the plugin (its requirements on the
# plugin search path; LOOM_PLUGIN_PATH adds folders, and out of tree the
# output folder is added, so a requirement built beside it is found: add
# it as a dependency, as Acme's CMakeLists.txt does).  NO_DECLARATIONS skips
# it (a plugin cross-compiled for another machine); list the capabilities in
# LOOM_PLUGIN_PROVIDES instead.
#
# Output: OUTPUT_DIRECTORY, else LOOM_PLUGIN_OUTPUT_DIRECTORY, else the
# current binary directory.  Install: <prefix>/lib/loom/plugins, where the
# core looks, unless NO_INSTALL.
include_guard(GLOBAL)
include(GNUInstallDirs)

function(loom_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL;NO_DECLARATIONS;RUNTIME_ONLY" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "loom_add_plugin(${name}): SOURCES is required")
  endif()
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "loom_add_plugin(${name}): plugin names use lower-case letters, digits and '_'")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  if(ARG_RUNTIME_ONLY)
    target_link_libraries(${name} PRIVATE Loom::runtime ${ARG_LIBRARIES})
  else()
    target_link_libraries(${name} PRIVATE Loom::core ${ARG_LIBRARIES})
  endif()
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
  if(NOT ARG_NO_DECLARATIONS)
    if(TARGET loomc)  # in Loom's own tree
      set(loomc $<TARGET_FILE:loomc>)
      add_dependencies(${name} loomc)
    elseif(TARGET Loom::loomc)  # against an installed SDK
      # The plugins this one requires may be built beside it (a backend's
      # runtime half): the output folder joins the search path.
      set(search ${output_dir})
      if(DEFINED ENV{LOOM_PLUGIN_PATH})
        set(search "${search}:$ENV{LOOM_PLUGIN_PATH}")
      endif()
      set(loomc ${CMAKE_COMMAND} -E env "LOOM_PLUGIN_PATH=${search}" $<TARGET_FILE:Loom::loomc>)
    else()
      message(FATAL_ERROR "loom_add_plugin(${name}): no loomc to declare the plugin with (the Loom SDK installs "
                          "Loom::loomc); pass NO_DECLARATIONS and list the capabilities in LOOM_PLUGIN_PROVIDES")
    endif()
    if(NOT CMAKE_OBJCOPY)
      message(FATAL_ERROR "loom_add_plugin(${name}): objcopy (binutils) is needed to embed the plugin's declarations")
    endif()
    set(declarations ${CMAKE_CURRENT_BINARY_DIR}/${name}.declarations.json)
    add_custom_command(TARGET ${name} POST_BUILD
      COMMAND ${loomc} plugins declare $<TARGET_FILE:${name}> -o ${declarations}
      COMMAND ${CMAKE_OBJCOPY} --remove-section .loom_declarations
              --add-section .loom_declarations=${declarations}
              --set-section-flags .loom_declarations=readonly,contents $<TARGET_FILE:${name}>
      COMMENT "Declaring plugin ${name} (.loom_declarations)"
      VERBATIM)
  endif()
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${name} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/loom/plugins)
  endif()
endfunction()
