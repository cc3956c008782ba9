# `make demo` (MIX_ENV=prod mix run scripts/demo.exs): a year of daily temperature on a 1-degree
# grid (float32, time x lat x lon = 365 x 180 x 360, about 95 MB) written by ExZarr as a Zarr v3
# array on local disk, read back three ways, and checked against zarr-python on the same files.
#
# The data is generated once by numpy (bench/peers/gen_data.py, deterministic) as a raw
# little-endian file that ExZarr reads with File.read/1, so both sides start from the same bytes.

Code.require_file("../bench/lib/python.ex", __DIR__)

defmodule Demo do
  @moduledoc false
  alias ExZarr.Bench.Python

  @root Path.expand("../demo_data", __DIR__)
  @shape {365, 180, 360}
  @chunks {30, 90, 90}
  @itemsize 4

  # The selections both libraries read: {name, start, stop}.
  @selections [
    {"time slice (day 200, whole globe)", {200, 0, 0}, {201, 180, 360}},
    {"point time series (45.5N, 200E, 365 days)", {0, 135, 200}, {365, 136, 201}},
    {"region (Jan-Mar, 30-60N, 0-40E)", {0, 120, 0}, {90, 150, 40}},
    {"whole array", {0, 0, 0}, @shape}
  ]

  def run do
    started = System.monotonic_time(:millisecond)
    File.mkdir_p!(@root)
    raw = generate()
    compressor = compressor()
    path = Path.join(@root, "temperature.zarr")
    data = File.read!(raw)
    section("1. Write with ExZarr")
    write(path, data, compressor)
    section("2. Read back with ExZarr")
    {:ok, array} = ExZarr.open(path: path)

    IO.puts(
      "  opened #{path}: shape #{inspect(array.metadata.shape)}, dtype #{array.metadata.dtype}"
    )

    ours = Enum.map(@selections, &read(array, &1, data))
    section("3. The same selections with zarr-python #{python_version()}")
    theirs = zarr_python(path)
    verdicts = compare(ours, theirs)
    seconds = (System.monotonic_time(:millisecond) - started) / 1000
    section("Done in #{Float.round(seconds, 1)} s")

    if Enum.all?(verdicts) do
      IO.puts("  zarr-python reads exactly what ExZarr wrote: every selection MATCHES.")
    else
      IO.puts("  MISMATCH between ExZarr and zarr-python (see above).")
      System.halt(1)
    end
  end

  defp generate do
    {t, y, x} = @shape
    spec = %{name: "temperature", kind: "climate", shape: [t, y, x], dtype: "float32", seed: 7}
    IO.puts("ExZarr demo: daily temperature, #{t} days x #{y} lat x #{x} lon, float32")
    {us, {:ok, %{"temperature" => raw}}} = :timer.tc(fn -> Python.gen_data(@root, [spec]) end)

    IO.puts(
      "  source data: #{raw} (#{mb(File.stat!(raw).size)}, numpy, generated once: #{ms(us)})"
    )

    raw
  end

  # zstd when the native codecs are there, else gzip, else (neither registered) uncompressed.
  defp compressor do
    Enum.find([%{id: "zstd", level: 3}, %{id: "gzip", level: 5}], fn %{id: id} ->
      match?({:ok, _}, ExZarr.Codec.Registry.fetch(id))
    end)
  end

  defp describe(nil), do: "none (no zstd or gzip codec registered)"
  defp describe(%{id: id, level: level}), do: "#{id} level #{level}"

  defp write(path, data, compressor) do
    File.rm_rf!(path)

    {:ok, array} =
      ExZarr.create(
        shape: @shape,
        chunks: @chunks,
        dtype: :float32,
        storage: :filesystem,
        path: path,
        zarr_format: 3,
        compressor: compressor,
        fill_value: 0.0,
        dimension_names: ["time", "lat", "lon"],
        attributes: %{"units" => "degC", "long_name" => "2 m air temperature (synthetic)"}
      )

    {t, y, x} = @shape
    {ct, cy, cx} = @chunks
    per_slab = div(y + cy - 1, cy) * div(x + cx - 1, cx)
    slabs = Enum.map(0..(t - 1)//ct, &{&1, min(&1 + ct, t)})
    total = length(slabs) * per_slab
    plane = y * x * @itemsize

    IO.puts(
      "  #{path}: chunks #{inspect(@chunks)} (#{mb(ct * cy * cx * @itemsize)} each), " <>
        "#{total} chunks, compressor #{describe(compressor)}"
    )

    # Each 30-day slab is a contiguous part of the input (C order): written as a sub-binary,
    # no copy. Slabs go in parallel and report as they complete.
    {us, _} =
      :timer.tc(fn ->
        slabs
        |> Task.async_stream(
          fn {t0, t1} ->
            slab = binary_part(data, t0 * plane, (t1 - t0) * plane)

            :ok =
              ExZarr.Array.set_slice(array, slab,
                start: {t0, 0, 0},
                stop: {t1, y, x},
                max_concurrency: 1
              )

            (t1 - t0) * plane
          end,
          ordered: false,
          timeout: :infinity
        )
        |> Enum.reduce({0, 0}, fn {:ok, bytes}, {chunks, done} ->
          {chunks, done} = {chunks + per_slab, done + bytes}
          IO.puts("  [#{String.pad_leading("#{chunks}", 3)}/#{total} chunks] #{mb(done)} written")
          {chunks, done}
        end)
      end)

    stored = stored_bytes(path)

    IO.puts(
      "  wrote #{mb(byte_size(data))} in #{ms(us)} (#{rate(byte_size(data), us)}); " <>
        "on disk #{mb(stored)}, ratio #{Float.round(byte_size(data) / stored, 2)}"
    )
  end

  defp read(array, {name, start, stop}, source) do
    {us, {:ok, bin}} =
      :timer.tc(fn -> ExZarr.Array.get_slice(array, start: start, stop: stop) end)

    shape =
      stop
      |> Tuple.to_list()
      |> Enum.zip(Tuple.to_list(start))
      |> Enum.map(fn {b, a} -> b - a end)

    summary = summary(bin)
    same = if stop == @shape, do: " (identical to the source bytes: #{bin == source})", else: ""

    IO.puts(
      "  #{name}: #{inspect(List.to_tuple(shape))} #{mb(byte_size(bin))} in #{ms(us)}" <>
        "#{if byte_size(bin) >= 1_000_000, do: " (#{rate(byte_size(bin), us)})"}#{same}"
    )

    IO.puts("      first #{inspect(summary.first)}, mean #{fmt_mean(summary.mean)}")
    summary
  end

  # SHA-256 of the bytes, the first three values and the mean (skipped for the whole array).
  defp summary(bin) do
    <<a::float-32-little, b::float-32-little, c::float-32-little, _::binary>> = bin
    n = div(byte_size(bin), @itemsize)

    mean =
      if n <= 1_000_000,
        do: for(<<v::float-32-little <- bin>>, reduce: 0.0, do: (acc -> acc + v)) / n,
        else: nil

    %{
      sha256: :crypto.hash(:sha256, bin) |> Base.encode16(case: :lower),
      first: Enum.map([a, b, c], &Float.round(&1, 4)),
      mean: mean
    }
  end

  defp zarr_python(path) do
    selections =
      Enum.map(@selections, fn {_, start, stop} -> [Tuple.to_list(start), Tuple.to_list(stop)] end)

    code = """
    import hashlib, json, sys, time
    import numpy as np, zarr
    a = zarr.open_array(sys.argv[1], mode="r")
    print("  zarr-python sees shape %s, chunks %s, dtype %s, codecs %s" % (
        a.shape, a.chunks, a.dtype, [c.to_dict()["name"] for c in a.metadata.codecs]), file=sys.stderr)
    out = []
    for start, stop in json.loads(sys.argv[2]):
        t0 = time.perf_counter()
        x = a[tuple(slice(s, e) for s, e in zip(start, stop))]
        seconds = time.perf_counter() - t0
        flat = x.ravel()
        out.append({"sha256": hashlib.sha256(x.astype("<f4").tobytes()).hexdigest(),
                    "first": [round(float(v), 4) for v in flat[:3]],
                    "mean": float(flat.mean(dtype=np.float64)) if flat.size <= 1000000 else None,
                    "ms": seconds * 1000})
    print(json.dumps(out))
    """

    case System.cmd(Python.executable(), ["-c", code, path, :jiffy.encode(selections)],
           stderr_to_stdout: true
         ) do
      {out, 0} ->
        lines = String.split(out, "\n", trim: true)
        Enum.each(Enum.drop(lines, -1), &IO.puts/1)
        :jiffy.decode(List.last(lines), [:return_maps])

      {out, status} ->
        IO.puts("  zarr-python failed (exit #{status}):\n#{out}")
        System.halt(1)
    end
  end

  defp compare(ours, theirs) do
    @selections
    |> Enum.zip(Enum.zip(ours, theirs))
    |> Enum.map(fn {{name, _, _}, {mine, py}} ->
      same_bytes = mine.sha256 == py["sha256"]
      same_mean = same_mean?(mine.mean, py["mean"])
      verdict = if same_bytes and same_mean, do: "MATCH", else: "MISMATCH"

      IO.puts("  #{name}: #{verdict}")

      IO.puts(
        "      zarr-python #{Float.round(py["ms"], 1)} ms, sha256 #{String.slice(py["sha256"], 0, 16)}..." <>
          " (ExZarr #{String.slice(mine.sha256, 0, 16)}...), first #{inspect(py["first"])}," <>
          " mean #{fmt_mean(py["mean"])}"
      )

      same_bytes and same_mean
    end)
  end

  defp same_mean?(nil, :null), do: true

  defp same_mean?(a, b) when is_number(a) and is_number(b),
    do: abs(a - b) <= 1.0e-6 * max(1.0, abs(b))

  defp same_mean?(_, _), do: false

  defp fmt_mean(m) when is_number(m), do: :erlang.float_to_binary(m / 1, decimals: 4)
  defp fmt_mean(_), do: "(not computed for the whole array)"

  defp python_version do
    {out, 0} = System.cmd(Python.executable(), ["-c", "import zarr; print(zarr.__version__)"])
    String.trim(out)
  end

  defp stored_bytes(path) do
    Path.wildcard(Path.join(path, "**"))
    |> Enum.reject(&File.dir?/1)
    |> Enum.map(&File.stat!(&1).size)
    |> Enum.sum()
  end

  defp section(title), do: IO.puts("\n#{title}")
  defp mb(bytes) when bytes < 1_000_000, do: "#{Float.round(bytes / 1000, 1)} kB"
  defp mb(bytes), do: "#{Float.round(bytes / 1.0e6, 1)} MB"
  defp ms(us) when us >= 1_000_000, do: "#{Float.round(us / 1.0e6, 2)} s"
  defp ms(us), do: "#{Float.round(us / 1000, 1)} ms"
  defp rate(bytes, us), do: "#{Float.round(bytes / max(us, 1), 1)} MB/s"
end

Demo.run()
