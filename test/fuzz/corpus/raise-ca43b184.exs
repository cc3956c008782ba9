# ExZarr fuzz regression case: raises FunctionClauseError in ExZarr.Indexing.selection/2
# first seen at step {:get_slice, 4294967297}: {:raise, %{frame: "ExZarr.Indexing.selection/2 (lib/ex_zarr/indexing.ex:31)", kind: FunctionClauseError, message: "no function clause matching in Keyword.get/3"}}
# found as case 26 of seed 2 (EXZARR_FUZZ_SEED=2), 24 shrinks
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:get_slice, 0},
    {:get_slice, {:box, 0, [], false}},
    {:resize, {:delta, [0]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: :int32,
       shape: {0},
       compressor: %{id: "blosc"},
       order: "C",
       endian: :little,
       chunks: {1}
     ]}
}
