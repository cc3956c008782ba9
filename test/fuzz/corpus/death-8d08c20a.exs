# ExZarr fuzz regression case: the VM dies in set_slice: Floating point exception
# first seen at step {:set_slice, :fit, {:box, 0, [], ...}}: {:death, "Floating point exception | exit status 136"}
# written by hand: issue 11: blosc typesize 2^31 in a hostile zarr.json
%{
  kind: :generated,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:resize, {:delta, [1]}}
  ],
  setup:
    {:store,
     [
       {"zarr.json",
        {:json,
         %{
           "chunk_grid" => %{"configuration" => %{"chunk_shape" => 'd'}, "name" => "regular"},
           "chunk_key_encoding" => %{"name" => "default"},
           "codecs" => [
             %{"configuration" => %{"endian" => "little"}, "name" => "bytes"},
             %{
               "configuration" => %{
                 "blocksize" => 0,
                 "clevel" => 5,
                 "cname" => "lz4",
                 "shuffle" => "shuffle",
                 "typesize" => 2_147_483_648
               },
               "name" => "blosc"
             }
           ],
           "data_type" => "int32",
           "fill_value" => 0,
           "node_type" => "array",
           "shape" => 'd',
           "zarr_format" => 3
         }}}
     ]}
}
