# The SA client against umc-sm processes (sa_integ.c), and umc-sa.
add_executable(sa_integ sa_integ.c)
target_compile_definitions(sa_integ PRIVATE _GNU_SOURCE)
target_link_libraries(sa_integ umc_testlib umc_testlib_cmocka umcast_static)
add_dependencies(sa_integ umc-sm umc-sa)
foreach(t register open_errors malformed_register_reply other_version_register join_leave
    sendonly sm_key_file lease_expiry restart get_table_10000 timeout_cancel window_storm
    window_silent hostile umc_sa_tool
    umc_sa_rmpp_reply rmpp_reply_to_get sm_squatted sm_replaced)
  umc_test(integ/sa_${t} sa_integ test_${t})
endforeach()
# ... and the squatter's user trusted (UMC_TRUST_UIDS): the port registers with it.
umc_test(integ/sa_sm_squatted_trusted sa_integ test_sm_squatted)
set_property(TEST integ/sa_sm_squatted_trusted APPEND PROPERTY ENVIRONMENT "UMC_TRUST_UIDS=65534")
# umc-sm under valgrind: no error, no leak, through the hostile datagrams and a
# restart.  Not in a sanitizer build: valgrind cannot run ASan binaries (ASan's
# leak checker covers that build).
if(UMC_VALGRIND AND NOT UMC_SANITIZE)
  foreach(t hostile restart)
    umc_test(integ/sa_valgrind_${t} sa_integ test_${t})
    set_property(TEST integ/sa_valgrind_${t} APPEND PROPERTY ENVIRONMENT "UMC_SM_VALGRIND=1")
  endforeach()
endif()

# umc-sm while another local process floods it (sm_flood.c).
add_executable(sm_flood sm_flood.c)
target_compile_definitions(sm_flood PRIVATE _GNU_SOURCE)
target_link_libraries(sm_flood umc_testlib umc_testlib_cmocka umcast_static)
add_dependencies(sm_flood umc-sm)
# Each measures the victim's service under one flood, as fast as the
# flooder can send: two at once on a 2-CPU machine (ctest -j2) starve each
# other's umc-sm instead, so they take turns (RESOURCE_LOCK).
foreach(t gettable_flood register_flood rmpp_hold)
  umc_test(integ/sm_${t} sm_flood test_${t})
  set_tests_properties(integ/sm_${t} PROPERTIES RESOURCE_LOCK umc_sm_flood)
endforeach()

# CM joins over the simulated InfiniBand link, several processes against
# umc-sm (ib_procs.c).
add_executable(ib_procs ib_procs.c agent.c)
target_compile_definitions(ib_procs PRIVATE _GNU_SOURCE)
target_link_libraries(ib_procs umc_testlib umcast_static)
add_dependencies(ib_procs umc-sm umc-ctl)
foreach(t sendonly nosendonly aggregate mgid0 ipoib lease exit restart timeout lapse smctl nosm
    unicast storm fwd fwd_restart squat_any squat_group)
  umc_test(integ/ib_${t} ib_procs ${t})
endforeach()
