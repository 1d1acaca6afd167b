# Keeps CMake's FetchContent from reaching the network while deno_core's quickjs
# backend builds WAMR: SIMDe comes from Debian's libsimde-dev headers instead.
set(FETCHCONTENT_FULLY_DISCONNECTED ON CACHE BOOL "" FORCE)
if(EXISTS "/usr/include/simde")
  set(FETCHCONTENT_SOURCE_DIR_SIMDE "/usr/include" CACHE PATH "" FORCE)
endif()
