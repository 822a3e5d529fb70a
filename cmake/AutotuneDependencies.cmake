# The build's own dependencies, found together so that every missing one is named in one line with the Debian package
# that provides it — for `make` (scripts/setup-deps.sh installs them) and for `pip install .`, which cannot install
# system packages itself. Sets the usual <Package>_FOUND targets, and TURBOJPEG_LIBRARY.

# find_package name | version | Debian package
set(_autotune_deps
  "fmt||libfmt-dev"
  "nlohmann_json|3.10|nlohmann-json3-dev"
  "CLI11||libcli11-dev"
  "yaml-cpp||libyaml-cpp-dev"
  "SQLite3||libsqlite3-dev"
  "Threads||libc6-dev"
  "JPEG||libjpeg62-turbo-dev")  # the libjpeg API (crop + skip scanlines)

set(_missing "")
set(_debs "")
foreach(_dep IN LISTS _autotune_deps)
  string(REPLACE "|" ";" _parts "${_dep}")
  list(GET _parts 0 _name)
  list(GET _parts 1 _version)
  list(GET _parts 2 _deb)
  find_package(${_name} ${_version} QUIET)
  if(NOT ${_name}_FOUND)
    if(_version)
      list(APPEND _missing "${_name} >= ${_version}")
    else()
      list(APPEND _missing "${_name}")
    endif()
    list(APPEND _debs ${_deb})
  endif()
endforeach()
find_library(TURBOJPEG_LIBRARY turbojpeg)  # tjDecompress2 / tjCompress2
if(NOT TURBOJPEG_LIBRARY)
  list(APPEND _missing "turbojpeg")
  list(APPEND _debs libturbojpeg0-dev)
endif()
if(_missing)
  list(JOIN _missing ", " _missing_text)
  list(JOIN _debs " " _debs_text)
  # The leading space keeps CMake from folding the line (a preformatted line): one line, as pip prints it.
  message(FATAL_ERROR " autotune: missing build dependencies: ${_missing_text} — on Debian/Ubuntu: apt-get install ${_debs_text}")
endif()
