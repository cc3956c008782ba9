defmodule ExZarr.Bench.Memory do
  @moduledoc """
  Memory of the running OS process, measured the same way for the BEAM and for the Python
  peers: the resident set from `/proc/self/status` (`VmRSS`, and `VmHWM` for the peak, which
  `reset_peak/0` resets through `/proc/self/clear_refs`). For the BEAM there is also a sampler
  of `:erlang.memory(:total)` (what the VM's allocators hold), polled every millisecond.

      ExZarr.Bench.Memory.reset_peak()
      base = ExZarr.Bench.Memory.rss()
      # ... work ...
      peak = ExZarr.Bench.Memory.peak_rss()
  """

  @doc "Current resident set size in bytes."
  @spec rss() :: non_neg_integer()
  def rss, do: status("VmRSS")

  @doc "Peak resident set size (since start or the last `reset_peak/0`) in bytes."
  @spec peak_rss() :: non_neg_integer()
  def peak_rss, do: status("VmHWM")

  @doc "Resets the kernel's peak-RSS counter to the current RSS."
  @spec reset_peak() :: :ok
  def reset_peak, do: File.write!("/proc/self/clear_refs", "5")

  @doc "Starts a process that samples `:erlang.memory(:total)` every millisecond."
  @spec start_sampler() :: pid()
  def start_sampler do
    spawn_link(fn -> sample(:erlang.memory(:total)) end)
  end

  @doc "Stops the sampler and returns the highest `:erlang.memory(:total)` it saw."
  @spec stop_sampler(pid()) :: non_neg_integer()
  def stop_sampler(pid) do
    send(pid, {:stop, self()})

    receive do
      {:peak, ^pid, peak} -> peak
    end
  end

  defp sample(peak) do
    receive do
      {:stop, from} -> send(from, {:peak, self(), max(peak, :erlang.memory(:total))})
    after
      1 -> sample(max(peak, :erlang.memory(:total)))
    end
  end

  defp status(field) do
    "/proc/self/status"
    |> File.read!()
    |> String.split("\n")
    |> Enum.find_value(fn line ->
      case String.split(line) do
        [name, kb, "kB"] -> if name == field <> ":", do: String.to_integer(kb) * 1024
        _ -> nil
      end
    end)
  end
end
