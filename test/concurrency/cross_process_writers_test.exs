defmodule ExZarr.CrossProcessWritersTest do
  @moduledoc """
  Writers in separate OS processes (BEAMs started with `elixir`, not connected to each other
  or to this one) doing read-modify-writes of disjoint rows of one stored value with
  `ExZarr.Storage.update/4`, with no node lock: only the store's conditional writes keep them
  apart. Every row must end holding its writer's value (zero lost updates). The same
  experiment with plain reads and puts shows that the race is real.
  """
  use ExUnit.Case, async: false
  @moduletag timeout: 900_000

  alias ExZarr.Storage
  alias ExZarr.Test.{ChildBeam, WriterStores}

  # argv: the Base64 of {backend, options, key, writer, processes, updates per process,
  # rows, mode, barrier folder, writers}. Mode :conditional or :plain sets rows; :toggle adds
  # and then removes a token per update, deleting the value when it is left empty. Prints
  # "calls=<fun calls> lost=<tokens found missing>".
  @child ~S"""
  [arg] = System.argv()

  {backend, opts, key, writer, procs, per_proc, rows, mode, barrier, writers} =
    arg |> Base.decode64!() |> :erlang.binary_to_term()

  {:ok, store} = ExZarr.Storage.new(backend, opts)
  calls = :counters.new(1, [])
  lost = :counters.new(1, [])

  # every writer is started before any writes
  ExZarr.Test.ChildBeam.barrier(barrier, writer, writers)

  set_row = fn current, row, bytes ->
    :counters.add(calls, 1, 1)
    current = current || :binary.copy(<<0>>, rows * 8)
    [binary_part(current, 0, row * 8), bytes, binary_part(current, row * 8 + 8, (rows - row - 1) * 8)]
  end

  for p <- 0..(procs - 1) do
    Task.async(fn ->
      for i <- 0..(per_proc - 1) do
        row = (writer * procs + p) * per_proc + i
        bytes = <<writer::16, p::16, i::32>>

        case mode do
          :conditional ->
            {:ok, :ok, _} =
              ExZarr.Storage.update(store, key, &{:write, set_row.(&1, row, bytes), :ok},
                node_lock: false, attempts: 1000, max_backoff: 100)

          :plain ->
            current =
              case ExZarr.Storage.get(store, key) do
                {:ok, value} -> value
                {:error, :not_found} -> nil
              end

            :ok = ExZarr.Storage.put(store, key, set_row.(current, row, bytes))

          :toggle ->
            # add a token, then take it out again, deleting the value when it is left empty:
            # a token missing when its writer comes to take it out was lost
            token = "<#{row}>"
            opts = [node_lock: false, attempts: 1000, max_backoff: 100]

            {:ok, :ok, _} =
              ExZarr.Storage.update(store, key, fn current ->
                :counters.add(calls, 1, 1)
                current = current || ""
                if String.contains?(current, token), do: {:keep, :ok}, else: {:write, [current, token], :ok}
              end, opts)

            {:ok, _, _} =
              ExZarr.Storage.update(store, key, fn current ->
                current = current || ""

                cond do
                  not String.contains?(current, token) -> {:keep, :counters.add(lost, 1, 1)}
                  current == token -> {:delete, :ok}
                  true -> {:write, String.replace(current, token, ""), :ok}
                end
              end, opts)
        end
      end
    end)
  end
  |> Enum.each(&Task.await(&1, :infinity))

  IO.puts("calls=#{:counters.get(calls, 1)} lost=#{:counters.get(lost, 1)}")
  """

  @writers 4
  @procs 4

  # Runs `child` in @writers OS processes, writer `w` with the argument `arg_of.(w, barrier)`
  # (a Base64 term); asserts they all exit 0 and returns their outputs.
  defp run_children(child, arg_of) do
    barrier = ExZarr.Test.Tmp.path("exzarr-barrier-")
    File.mkdir_p!(barrier)

    try do
      0..(@writers - 1)
      |> Task.async_stream(
        fn w ->
          ChildBeam.run(child, [Base.encode64(:erlang.term_to_binary(arg_of.(w, barrier)))])
        end,
        max_concurrency: @writers,
        timeout: :infinity
      )
      |> Enum.map(fn {:ok, {out, status}} ->
        assert status == 0, out
        out
      end)
    after
      File.rm_rf!(barrier)
    end
  end

  defp child_runs(backend, opts, key, per_proc, mode) do
    rows = @writers * @procs * per_proc

    outputs =
      run_children(
        @child,
        &{backend, opts, key, &1, @procs, per_proc, rows, mode, &2, @writers}
      )

    for out <- outputs, reduce: {0, 0} do
      {calls, lost} ->
        [_, c, l] = Regex.run(~r/calls=(\d+) lost=(\d+)/, out)
        {calls + String.to_integer(c), lost + String.to_integer(l)}
    end
  end

  # Runs the experiment on `opts` of `backend`; -> {rows lost, fun calls beyond one per update}.
  defp experiment(backend, opts, key, per_proc, mode) do
    rows = @writers * @procs * per_proc
    {calls, 0} = child_runs(backend, opts, key, per_proc, mode)
    {:ok, store} = Storage.new(backend, opts)
    {:ok, value} = Storage.get(store, key)
    assert byte_size(value) == rows * 8

    lost =
      for w <- 0..(@writers - 1),
          p <- 0..(@procs - 1),
          i <- 0..(per_proc - 1),
          row = (w * @procs + p) * per_proc + i,
          binary_part(value, row * 8, 8) != <<w::16, p::16, i::32>>,
          do: row

    {length(lost), calls - rows}
  end

  # Tokens added and removed again by writers of 4 OS processes, the value deleted whenever it
  # is left empty; -> {tokens lost, adds beyond one per token}. A delete that is not
  # conditional in one step can take a token added meanwhile with it.
  defp toggle_experiment(backend, opts, key, per_proc) do
    {calls, lost} = child_runs(backend, opts, key, per_proc, :toggle)
    {:ok, store} = Storage.new(backend, opts)
    assert Storage.get(store, key) == {:error, :not_found}
    {lost, calls - @writers * @procs * per_proc}
  end

  @tag :tmp_dir
  test "filesystem: writers in 4 OS processes lose no update", ctx do
    opts = [path: Path.join(ctx.tmp_dir, "a.zarr")]
    {lost, retries} = experiment(:filesystem, opts, "c/0/0", 25, :conditional)
    assert lost == 0
    # the writers did collide (and the conditions sent them back)
    assert retries > 0
    # and without conditions the same writers lose updates
    {lost, _} = experiment(:filesystem, opts, "c/0/1", 25, :plain)
    assert lost > 0
  end

  @tag :tmp_dir
  test "filesystem: deletes of emptied values from 4 OS processes lose no token", ctx do
    opts = [path: Path.join(ctx.tmp_dir, "d.zarr")]
    assert {0, retries} = toggle_experiment(:filesystem, opts, "c/0/0", 15)
    assert retries > 0
  end

  # argv: the Base64 of {store options, writer, processes, updates per process, barrier
  # folder, writers}: attribute updates of the root group and shape growths of the array "a".
  @metadata_child ~S"""
  [arg] = System.argv()
  {opts, writer, procs, per_proc, barrier, writers} = arg |> Base.decode64!() |> :erlang.binary_to_term()
  {:ok, group} = ExZarr.open_group(opts)
  ExZarr.Test.ChildBeam.barrier(barrier, writer, writers)

  for p <- 0..(procs - 1) do
    Task.async(fn ->
      for i <- 0..(per_proc - 1) do
        {:ok, _} = ExZarr.Group.update_attributes(group, %{"w#{writer}p#{p}i#{i}" => i})
        {:ok, {{old, _}, {new, _}}} =
          ExZarr.Node.update_shape(group.storage, "a", fn {n, m} -> {:ok, {n + 1, m}} end)
        IO.puts("region=#{old}-#{new}")
      end
    end)
  end
  |> Enum.each(&Task.await(&1, :infinity))
  """

  for format <- [2, 3] do
    @tag :tmp_dir
    test "filesystem v#{format}: metadata changes from 4 OS processes all land", ctx do
      opts = [path: Path.join(ctx.tmp_dir, "g.zarr")]
      {:ok, root} = ExZarr.create_group(opts ++ [zarr_format: unquote(format)])
      {:ok, _} = ExZarr.Group.create_array(root, "a", shape: {0, 2})
      per_proc = 5
      outputs = run_children(@metadata_child, &{opts, &1, @procs, per_proc, &2, @writers})

      total = @writers * @procs * per_proc
      {:ok, root} = ExZarr.open_group(opts)
      assert map_size(ExZarr.Group.attributes(root)) == total
      {:ok, array} = ExZarr.open(opts ++ [prefix: "a"])
      assert array.metadata.shape == {total, 2}
      # every growth got its own region, as concurrent appends need
      regions = for out <- outputs, [_, a] <- Regex.scan(~r/region=(\d+)-/, out), do: a
      assert Enum.sort_by(regions, &String.to_integer/1) == Enum.map(0..(total - 1), &"#{&1}")
    end
  end

  # The object stores, with 5 ms of latency; MinIO's deletes are not conditional (it ignores
  # If-Match on DELETE), so the delete experiment runs only on the others.
  for {kind, name, toggle?} <- [
        {:s3, "S3 (MinIO)", false},
        {:azure, "Azure (Azurite)", true},
        {:gcs, "GCS (fake-gcs-server)", true},
        {:mongo_gridfs, "GridFS (FerretDB)", true}
      ] do
    test "#{name}: writers in 4 OS processes lose no update" do
      case WriterStores.start(unquote(kind), "writers", "a.zarr", 5) do
        {:ok, opts} ->
          assert {0, _retries} = experiment(unquote(kind), opts, "c/0/0", 5, :conditional)

          if unquote(toggle?),
            do: assert({0, _retries} = toggle_experiment(unquote(kind), opts, "c/0/1", 4))

        {:skip, reason} ->
          IO.puts("skipped: #{reason}")
      end
    end
  end
end
