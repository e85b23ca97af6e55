# sa_client, the SA MAD client of the differential test and of
# bench/sm-bench.sh; included from both, defined once.  It needs libibumad
# (libibumad-dev) for the OpenSM side.
if(NOT TARGET sa_client)
  pkg_check_modules(IBUMAD IMPORTED_TARGET libibumad)
  if(IBUMAD_FOUND)
    set(d ${CMAKE_CURRENT_LIST_DIR})
    add_executable(sa_client ${d}/sa_client.c ${d}/sa_util.c ${d}/sa_fields.c ${d}/sa_seq.c
      ${d}/sa_run.c ${d}/sa_xport_umad.c ${d}/sa_xport_sm.c ${d}/sa_bench.c)
    target_compile_definitions(sa_client PRIVATE _GNU_SOURCE)
    target_link_libraries(sa_client umcast_static PkgConfig::IBUMAD)
    add_dependencies(sa_client umc-sm)
  else()
    message(STATUS "libibumad not found: sa_client (tests/integ/sa_diff) is not built")
  endif()
endif()
