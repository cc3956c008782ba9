defmodule ExZarr.Native.FuzzTest do
  # A short bounded libFuzzer run (AddressSanitizer + UBSan) of every C decoder, of the
  # encoders' parameter checks, of the copy kernels' argument checks, of the batch decoder
  # (decode_into), of the checksums, the sub-byte kernels, zfp, pcodec, the point selections and
  # the vlen layout walk; `make fuzz` runs the same targets for longer.
  use ExUnit.Case, async: false

  @moduletag :fuzz
  @moduletag timeout: 300_000

  # pco: the pcodec decoder, built with the NIF when cargo is installed.
  @targets ~w(zstd blosc lz4 bz2 lzma gzip zlib encode copy filters batch checksums subbyte zfp select vlen) ++
             if(System.find_executable("cargo"), do: ["pco"], else: [])
  @seconds 36

  test "fuzz targets run without a crash" do
    if System.find_executable("clang") do
      {out, status} =
        System.cmd("make", ["-j2", "-s", "-C", "c_src", "fuzz", "FUZZ_SECONDS=#{@seconds}"],
          stderr_to_stdout: true
        )

      IO.puts(out)
      assert status == 0, out

      for target <- @targets do
        assert out =~ ~r/fuzz #{target}: [1-9]\d* runs in \d+ s, no crash/, out
      end
    else
      IO.puts("clang is not installed: skipping the fuzz run (apt-get install clang)")
    end
  end
end
