# ExZarr fuzz regression case: get_slice goes over the per-process heap limit
# first seen at step {:get_slice, :whole}: {:oom, ":killed"}
# found as case 2217 of seed 2 (EXZARR_FUZZ_SEED=2), 14 shrinks
%{
  kind: :generated,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:resize, {:delta, [1]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  setup:
    {:store,
     [
       {"zarr.json",
        {:json,
         %{
           "attributes" => %{},
           "chunk_grid" => %{
             "configuration" => %{"chunk_shape" => [5, 4, 2]},
             "name" => "regular"
           },
           "chunk_key_encoding" => %{
             "configuration" => %{"separator" => "/"},
             "name" => "default"
           },
           "codecs" => [%{"name" => "vlen-bytes"}],
           "data_type" => "variable_length_bytes",
           "dimension_names" => :null,
           "fill_value" => "",
           "node_type" => "array",
           "shape" => [0, 0, 2_147_483_648],
           "storage_transformers" => [],
           "zarr_format" => 3
         }}}
     ]}
}
