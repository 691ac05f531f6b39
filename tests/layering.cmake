# Fails when a source file includes a header of a layer above its own
# (docs/architecture.md#layers). Run by the build (target tide_layering) and by ctest:
#   cmake -D TIDE_SOURCE_DIR=<repo> -P tests/layering.cmake
#
# A layer may include its own headers and those of the layers listed for it.
cmake_minimum_required(VERSION 3.22)

set(allowed_core "host/core")
set(allowed_model "host/core;host/model")
set(allowed_config "host/core;host/model;host/config")
set(allowed_ledger "host/core;host/model;host/ledger")
set(allowed_sched "host/core;host/model;host/sched")
set(allowed_lua "host/core;host/model;host/lua")
set(allowed_drivers "host/core;host/model;drivers")
set(allowed_agent "host/core;host/model;drivers;host/agent")
set(allowed_engine "host/core;host/model;host/ledger;host/sched;host/lua;drivers;host/engine")
set(allowed_api "host/core;host/model;host/config;host/ledger;host/sched;host/lua;drivers;host/engine;host/api")
set(allowed_cli "host/core;host/model;host/config;host/ledger;host/sched;host/lua;drivers;host/engine;host/api;host/agent;host/cli")

if(NOT TIDE_SOURCE_DIR)
  message(FATAL_ERROR "layering.cmake: pass -D TIDE_SOURCE_DIR=<repository root>")
endif()

set(violations "")
foreach(layer core model config ledger sched lua drivers agent engine api cli)
  if(layer STREQUAL "drivers")
    set(dir "drivers")
  else()
    set(dir "host/${layer}")
  endif()
  file(GLOB_RECURSE files RELATIVE "${TIDE_SOURCE_DIR}" "${TIDE_SOURCE_DIR}/${dir}/*.h"
       "${TIDE_SOURCE_DIR}/${dir}/*.cpp")
  foreach(file ${files})
    file(STRINGS "${TIDE_SOURCE_DIR}/${file}" includes REGEX "^#include \"(host/[a-z_]+|drivers)/")
    foreach(line ${includes})
      string(REGEX MATCH "\"(host/[a-z_]+|drivers)/" target "${line}")
      string(REGEX REPLACE "^\"|/$" "" target "${target}")
      if(NOT target IN_LIST allowed_${layer})
        string(REGEX MATCH "\"[^\"]+\"" header "${line}")
        string(APPEND violations "\n  ${file} (layer ${layer}) includes ${header}")
      endif()
    endforeach()
  endforeach()
endforeach()

# Within host/lua, the runtime is the floor the other parts (registry, policy, strategy, hook)
# build on: it includes none of them. They hand it what it must not know (a kind's verbs,
# script_loader.h's ScriptVerbs).
file(GLOB_RECURSE files RELATIVE "${TIDE_SOURCE_DIR}" "${TIDE_SOURCE_DIR}/host/lua/runtime/*.h"
     "${TIDE_SOURCE_DIR}/host/lua/runtime/*.cpp")
foreach(file ${files})
  file(STRINGS "${TIDE_SOURCE_DIR}/${file}" includes REGEX "^#include \"host/lua/[a-z_]+/")
  foreach(line ${includes})
    if(NOT line MATCHES "^#include \"host/lua/runtime/")
      string(REGEX MATCH "\"[^\"]+\"" header "${line}")
      string(APPEND violations "\n  ${file} (host/lua/runtime) includes ${header}")
    endif()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "includes that run against the layers (docs/architecture.md#layers):${violations}")
endif()
